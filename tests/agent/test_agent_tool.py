"""Agents as tools (API-AGTOOL-*): ``bot.as_tool(name=, description=)`` makes a graph bot a tool of another.

The inner run is a child of the calling tool's span in the outer trace, its usage adds to the outer run's and the
outer limits hold inside it; deps and the approver pass down; an inner pause for approval pauses the outer run,
and resuming the outer run continues the inner one from its checkpoint.
"""

from __future__ import annotations

import pytest

from llamabot import AgentBot, AsyncAgentBot, Decision, RunContext, ScriptedModel, UsageLimits, tool
from llamabot.agents.approval import ApprovalRequired, PausedRun
from llamabot.models.scripted import tool_call
from llamabot.observe.usage import UsageLimitExceeded
from llamabot.reasoning.anot import ANoTBot


@tool
def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: What to look up.
    """
    return f"facts about {topic}"


def researcher() -> AgentBot:
    """An inner agent: looks the topic up, then answers with what it found."""
    model = ScriptedModel([tool_call("lookup", topic="owls"), tool_call("respond_to_user", response="owls hoot")])
    return AgentBot(tools=[lookup], model=model)


def writer(inner_tool, **options) -> AgentBot:
    """An outer agent that asks the inner one, then answers with its result."""
    model = ScriptedModel([tool_call("research", query="tell me about owls"),
                           tool_call("respond_to_user", response="Report: owls hoot")])
    return AgentBot(tools=[inner_tool], model=model, **options)


def test_api_agtool_010_the_tool_takes_one_query_and_describes_the_agent():
    research = researcher().as_tool(name="research", description="Find facts about a topic.")
    params = research.parameters
    assert list(params["properties"]) == ["query"] and params["required"] == ["query"]
    assert research.description == "Find facts about a topic."


def test_api_agtool_020_the_inner_run_is_a_child_span_and_its_usage_adds_up():
    inner = researcher()
    outer = writer(inner.as_tool(name="research", description="Find facts."))
    answer, trace = outer.run_sync("Write about owls")
    assert answer == "Report: owls hoot"
    [tool_span] = [s for s in trace.spans if s.name == "research"]
    [inner_run] = [s for s in trace.spans if s.kind == "run" and s.parent_id is not None]
    assert inner_run.parent_id == tool_span.span_id
    assert tool_span.attributes["result"] == "owls hoot"
    assert [s.name for s in trace.spans if s.kind == "tool_call"] == ["research", "lookup", "respond_to_user",
                                                                       "respond_to_user"]
    assert trace.usage.requests == 4  # the outer run's 2 requests and the inner run's 2
    assert inner_run.attributes["usage"].requests == 2


async def test_api_agtool_030_async_outer_runs_await_the_inner_bot():
    inner = researcher()
    outer_model = ScriptedModel([tool_call("research", query="owls"), tool_call("respond_to_user", response="ok")])
    outer = AsyncAgentBot(tools=[inner.as_tool(name="research", description="Find facts.")], model=outer_model)
    answer, trace = await outer.arun_with_trace("q")
    assert answer == "ok" and trace.usage.requests == 4
    assert inner.last_trace is trace  # one trace for both


def test_api_agtool_040_the_outer_usage_limits_hold_inside_the_inner_run():
    outer = writer(researcher().as_tool(name="research", description="Find facts."),
                   usage_limits=UsageLimits(max_requests=2))
    with pytest.raises(UsageLimitExceeded):
        outer("q")
    assert outer.last_trace.usage.requests == 2


def test_api_agtool_050_deps_pass_down_to_the_inner_tools():
    seen = []

    @tool
    def whoami(ctx: RunContext[str]) -> str:
        """Who asks."""
        seen.append(ctx.deps)
        return ctx.deps

    inner = AgentBot(tools=[whoami], model=ScriptedModel([tool_call("whoami"),
                                                          tool_call("respond_to_user", response="done")]))
    writer(inner.as_tool(name="research", description="Find facts."))("q", deps="dora")
    assert seen == ["dora"]


def payer() -> tuple[list, AgentBot]:
    sent: list = []

    @tool(requires_approval=True)
    def pay(amount: float) -> str:
        """Pay.

        Args:
            amount: How much.
        """
        sent.append(amount)
        return f"paid {amount}"

    model = ScriptedModel([tool_call("pay", amount=7), tool_call("respond_to_user", response="payment done")])
    return sent, AgentBot(tools=[pay], model=model)


def test_api_agtool_060_an_inner_pause_pauses_the_outer_run_and_resume_continues_both():
    sent, inner = payer()
    outer = writer(inner.as_tool(name="research", description="Pays."))
    with pytest.raises(ApprovalRequired) as info:
        outer("pay 7")
    assert sent == []
    (request,) = info.value.requests
    assert (request.tool, request.arguments) == ("pay", {"amount": 7.0})
    # from JSON, as another process would
    paused = PausedRun.from_json(info.value.paused.to_json())
    assert outer.resume(paused, {request.call_id: Decision.approve()}) == "Report: owls hoot"
    assert sent == [7.0]
    results = [m["content"] for m in outer.model.requests[-1].messages if m.get("role") == "tool"]
    assert "payment done" in results  # the outer model saw the inner answer


def test_api_agtool_070_a_rejected_inner_call_never_runs_and_the_inner_model_sees_why():
    sent, inner = payer()
    outer = writer(inner.as_tool(name="research", description="Pays."))
    with pytest.raises(ApprovalRequired) as info:
        outer("pay 7")
    outer.resume(info.value, {info.value.requests[0].call_id: Decision.reject("over budget")})
    assert sent == []
    shown = [m["content"] for m in inner.model.requests[-1].messages if m.get("role") == "tool"]
    assert any("over budget" in c for c in shown)


def test_api_agtool_080_the_outer_approver_decides_for_the_inner_run():
    sent, inner = payer()
    asked = []
    outer = writer(inner.as_tool(name="research", description="Pays."),
                   approver=lambda request: asked.append(request.tool) or True)
    assert outer("pay 7") == "Report: owls hoot"
    assert sent == [7.0] and asked == ["pay"]


def test_api_agtool_090_bad_definitions_are_refused():
    bot = researcher()
    with pytest.raises(ValueError, match="tool name"):
        bot.as_tool(name="do research", description="x")
    with pytest.raises(ValueError, match="description"):
        bot.as_tool(name="research", description=" ")
    with pytest.raises(TypeError, match="items"):
        ANoTBot(model=ScriptedModel()).as_tool(name="rank", description="Rank.")

"""Usage totals and usage limits (AGT-USE-*), on the scripted model with known token counts and costs."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from llamabot import (
    AgentBot,
    AsyncAgentBot,
    RunUsage,
    ScriptedModel,
    Trace,
    UsageLimitExceeded,
    UsageLimits,
    tool,
)
from llamabot.models.reply import Usage
from llamabot.models.scripted import tool_call
from llamabot.toolkits.calculator import add, multiply


def costed(reply, prompt: int, completion: int, cost: float | None):
    return dataclasses.replace(reply, usage=Usage(prompt, completion, cost))


def script():
    return [
        costed(tool_call("multiply", a=23, b=19), 100, 10, 0.001),
        costed(tool_call("add", a=437, b=1), 150, 12, 0.002),
        costed(tool_call("respond_to_user", response="438"), 200, 8, 0.003),
    ]


def test_agt_use_010_a_run_totals_requests_tokens_and_cost_on_its_trace_its_run_span_and_the_final_event():
    bot = AgentBot(tools=[multiply, add], model=ScriptedModel(script()))
    answer, trace = bot.run_sync("23*19+1?")
    assert answer == "438"
    assert trace.usage == RunUsage(3, 450, 30, pytest.approx(0.006))
    assert trace.usage.total_tokens == 480
    run_span = trace.spans[0]
    assert run_span.category == "run" and run_span.attributes["usage"].to_dict() == trace.usage.to_dict()
    # the exported trace carries the total and loads back with it
    exported = trace.to_dict()
    assert exported["usage"]["requests"] == 3 and exported["usage"]["input_tokens"] == 450
    assert Trace.from_dict(exported).usage == trace.usage

    async def stream():
        streamed = AsyncAgentBot(tools=[multiply, add], model=ScriptedModel(script()))
        return [e async for e in streamed.astream("23*19+1?")]

    final = asyncio.run(stream())[-1]
    assert final.kind == "final_answer" and final.data["usage"]["requests"] == 3
    assert final.data["usage"]["output_tokens"] == 30 and final.data["usage"]["cost"] == pytest.approx(0.006)


def test_agt_use_020_cost_stays_none_when_no_provider_reports_one():
    replies = [costed(r, 10, 1, None) for r in script()]
    _, trace = AgentBot(tools=[multiply, add], model=ScriptedModel(replies)).run_sync("q")
    assert trace.usage.cost is None and trace.usage.requests == 3
    assert "$" not in trace.usage.describe()


def test_agt_use_030_max_requests_stops_the_run_before_the_request_that_would_exceed_it():
    model = ScriptedModel(script())
    bot = AgentBot(tools=[multiply, add], model=model, usage_limits=UsageLimits(max_requests=2))
    with pytest.raises(UsageLimitExceeded) as info:
        bot("23*19+1?")
    error = info.value
    assert error.limit == "max_requests" and error.value == 2
    assert error.usage == RunUsage(2, 250, 22, pytest.approx(0.003))
    assert len(model.requests) == 2  # the third request was never sent
    assert "request 3 was not sent" in str(error)
    refused = bot.last_trace.of_kind("model_call")[-1]
    assert refused.error.startswith("UsageLimitExceeded") and "reply" not in refused.attributes
    # every tool call in the memory is answered, so the conversation can go on
    assert bot.memory[-1]["role"] == "tool"


@pytest.mark.parametrize(("limits", "name", "sent"), [
    (UsageLimits(max_tokens=110), "max_tokens", 1),   # 110 tokens after the first request: the second is refused
    (UsageLimits(max_tokens=111), "max_tokens", 2),   # 110 < 111: the second request is sent (and overshoots)
    (UsageLimits(max_cost=0.003), "max_cost", 2),     # $0.003 after two requests
])
def test_agt_use_040_token_and_cost_limits_stop_the_run_once_the_total_has_reached_them(limits, name, sent):
    model = ScriptedModel(script())
    with pytest.raises(UsageLimitExceeded) as info:
        AgentBot(tools=[multiply, add], model=model)("q", usage_limits=limits)
    assert info.value.limit == name and len(model.requests) == sent


def test_agt_use_050_a_run_option_replaces_the_bot_limits_and_concurrent_runs_count_separately():
    bot = AsyncAgentBot(tools=[multiply, add], model=ScriptedModel(responder=_answer),
                        usage_limits=UsageLimits(max_requests=1))

    async def main():
        return await asyncio.gather(*(bot.arun_with_trace(f"q{i}", usage_limits=UsageLimits(max_requests=3))
                                      for i in range(5)))

    results = asyncio.run(main())
    assert [r for r, _ in results] == ["done"] * 5
    assert all(t.usage.requests == 2 for _, t in results)  # each run counts only its own requests
    with pytest.raises(UsageLimitExceeded):
        asyncio.run(bot.arun("q"))  # the bot's own limit (1 request) applies when the run gives none


def _answer(request):
    if request.messages[-1]["role"] == "tool":
        return tool_call("respond_to_user", response="done")
    return tool_call("add", a=1, b=2)


def test_agt_use_060_a_bot_run_inside_a_tool_shares_the_outer_run_usage_and_limits():
    inner = AgentBot(model=ScriptedModel([tool_call("respond_to_user", response="inner")] * 3))

    @tool
    def ask_inner(question: str) -> str:
        """Ask another agent.

        Args:
            question: What to ask.
        """
        return inner(question)

    outer_model = ScriptedModel([tool_call("ask_inner", question="x"), tool_call("ask_inner", question="y"),
                                 tool_call("respond_to_user", response="outer")])
    outer = AgentBot(tools=[ask_inner], model=outer_model)
    answer, trace = outer.run_sync("q")
    assert answer == "outer" and trace.usage.requests == 5  # 3 outer decisions + 2 inner ones
    nested = [s for s in trace.spans if s.category == "run" and s.parent_id is not None]
    assert [s.attributes["usage"].requests for s in nested] == [1, 1]  # each nested run's own share
    # limits of the outer run hold inside the nested runs too: the inner bot's request is refused; the tool's
    # failure is shown to the model, which has no requests left either
    outer_model = ScriptedModel([tool_call("ask_inner", question="x"), tool_call("respond_to_user", response="r")])
    with pytest.raises(UsageLimitExceeded):
        AgentBot(tools=[ask_inner], model=outer_model)("q", usage_limits=UsageLimits(max_requests=1))


@pytest.mark.parametrize("bad", [dict(max_requests=-1), dict(max_tokens=1.5), dict(max_cost="1"),
                                 dict(max_requests=True)])
def test_agt_use_070_invalid_limits_are_refused_when_made(bad):
    with pytest.raises(ValueError, match="UsageLimits"):
        UsageLimits(**bad)


def test_agt_use_080_every_graph_bot_obeys_limits_given_to_a_run_or_set_on_the_bot():
    from llamabot.models.scripted import json_reply
    from llamabot.reasoning.aot import AoTBot

    invalid_plan = {"atoms": [{"id": 1, "kind": "tool", "name": "sqrt", "input": {"x": 4}, "dependsOn": []}]}
    model = ScriptedModel([json_reply(invalid_plan)] * 6)
    with pytest.raises(UsageLimitExceeded) as info:
        AoTBot(model=model, max_replans=5)("q", usage_limits=UsageLimits(max_requests=2))
    assert info.value.usage.requests == 2 and len(model.requests) == 2
    bot = AoTBot(model=ScriptedModel([json_reply(invalid_plan)] * 6), max_replans=5)
    bot.usage_limits = UsageLimits(max_requests=3)
    with pytest.raises(UsageLimitExceeded):
        bot("q")
    assert bot.last_trace.usage.requests == 3

"""Typed dependencies (API-DEPS-*): ``bot(q, deps=...)`` reaches the tools that ask for a ``RunContext``.

A tool's first parameter annotated ``RunContext[Deps]`` gets the run's deps, id, live usage, its call id and the
decision it runs under; the parameter is never in the schema. Concurrent runs of one bot never see each other's
deps. Unknown run options are a ``TypeError``, never ignored.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest

from llamabot import AgentBot, AsyncAgentBot, RunContext, ScriptedModel, tool
from llamabot.agents.approval import ApprovalRequired
from llamabot.errors import ToolDefinitionError
from llamabot.models.scripted import tool_call, tool_calls
from llamabot.reasoning.aot import AoTBot
from llamabot.tools.approval import Decision
from llamabot.tools.call import invoke_tool
from tests.agent.helpers import tool_messages


@dataclass
class Deps:
    user: str
    seen: list


@tool
def whoami(ctx: RunContext[Deps], greeting: str) -> str:
    """Greet the run's user.

    Args:
        greeting: The word to greet with.
    """
    ctx.deps.seen.append(ctx)
    return f"{greeting} {ctx.deps.user}"


def greet_then_answer(request):
    done = tool_messages(request)
    if not done:
        return tool_call("whoami", greeting="hi")
    return tool_call("respond_to_user", response=done[-1]["content"])


def test_api_deps_010_the_context_parameter_is_hidden_from_the_schema():
    schema = whoami.json_schema["function"]["parameters"]
    assert list(schema["properties"]) == ["greeting"] and schema["required"] == ["greeting"]
    assert whoami.tool.context_param == "ctx"


def test_api_deps_020_a_run_gives_its_deps_id_usage_and_call_id_to_the_tool():
    deps = Deps("ada", [])
    bot = AgentBot(tools=[whoami], model=ScriptedModel(responder=greet_then_answer))
    answer, trace = bot.run_sync("who am I?", deps=deps)
    assert answer == "hi ada"
    (ctx,) = deps.seen
    assert ctx.deps is deps and ctx.run_id == trace.trace_id and ctx.tool_name == "whoami"
    [span] = [s for s in trace.spans if s.name == "whoami"]
    assert ctx.tool_call_id == span.attributes["call_id"]
    assert ctx.usage is trace.usage and ctx.usage.requests >= 1  # live: what the run spent so far
    assert ctx.approval is None


def test_api_deps_030_the_hidden_deps_alias_and_the_old_names_keep_working():
    seen = []

    @tool
    def legacy(x: int, _deps: Deps | None = None, _trace_id: str = "") -> str:
        """Old style.

        Args:
            x: A number.
        """
        seen.append((_deps, _trace_id))
        return "ok"

    model = ScriptedModel([tool_call("legacy", x=1), tool_call("respond_to_user", response="done")])
    deps = Deps("bob", [])
    _, trace = AgentBot(tools=[legacy], model=model).run_sync("q", deps=deps)
    assert seen == [(deps, trace.trace_id)]


def test_api_deps_040_outside_a_run_the_context_has_no_deps():
    seen = []

    @tool
    def probe(ctx: RunContext[None]) -> str:
        """Probe."""
        seen.append(ctx)
        return "ok"

    assert invoke_tool(probe, {}).unwrap() == "ok"
    (ctx,) = seen
    assert (ctx.deps, ctx.run_id, ctx.tool_name, ctx.usage.requests) == (None, "", "probe", 0)


def test_api_deps_050_a_run_context_parameter_that_is_not_first_is_refused():
    with pytest.raises(ToolDefinitionError, match="RunContext parameter must be the first"):
        @tool
        def late(x: int, ctx: RunContext[Deps]) -> str:
            """Late.

            Args:
                x: A number.
            """
            return ""


def test_api_deps_060_an_unknown_run_option_is_a_type_error_naming_the_closest():
    bot = AgentBot(tools=[whoami], model=ScriptedModel(responder=greet_then_answer))
    with pytest.raises(TypeError, match="'dep'.*did you mean deps"):
        bot("q", dep=Deps("x", []))
    with pytest.raises(TypeError, match="'globals_dic'.*did you mean globals_dict"):
        bot.run_sync("q", globals_dic={})
    assert bot.model.requests == []  # nothing reached the model


async def test_api_deps_070_a_thousand_concurrent_runs_each_see_their_own_deps():
    bot = AsyncAgentBot(tools=[whoami], model=ScriptedModel(responder=greet_then_answer, latency_s=0.005,
                                                             record=False))
    all_deps = [Deps(f"user{i}", []) for i in range(1000)]
    answers = await asyncio.gather(*(bot.arun("who am I?", deps=d) for d in all_deps))
    assert answers == [f"hi user{i}" for i in range(1000)]
    for deps in all_deps:
        (ctx,) = deps.seen
        assert ctx.deps is deps


async def test_api_deps_080_parallel_calls_of_a_context_tool_each_get_their_call_id():
    deps = Deps("cy", [])
    model = ScriptedModel([tool_calls(("whoami", {"greeting": "a"}), ("whoami", {"greeting": "b"}),
                                      ("whoami", {"greeting": "c"})),
                           tool_call("respond_to_user", response="done")])
    _, trace = await AsyncAgentBot(tools=[whoami], model=model).arun_with_trace("q", deps=deps)
    ids = {s.attributes["call_id"] for s in trace.spans if s.name == "whoami" and "call_id" in s.attributes}
    assert {c.tool_call_id for c in deps.seen} == ids and len(ids) == 3
    assert {c.deps.user for c in deps.seen} == {"cy"}


def test_api_deps_090_the_decision_a_call_runs_under_is_in_its_context():
    seen = []

    @tool(requires_approval=True)
    def pay(ctx: RunContext[None], amount: float) -> str:
        """Pay.

        Args:
            amount: How much.
        """
        seen.append(ctx.approval)
        return f"paid {amount}"

    model = ScriptedModel([tool_call("pay", amount=500), tool_call("respond_to_user", response="done")])
    bot = AgentBot(tools=[pay], model=model)
    with pytest.raises(ApprovalRequired) as info:
        bot("pay")
    call_id = info.value.requests[0].call_id
    edited = Decision.approve(arguments={"amount": 50})
    assert bot.resume(info.value, {call_id: edited}, deps=None) == "done"
    assert seen == [edited]


def test_api_deps_100_resume_takes_the_deps_again_they_are_never_in_the_checkpoint():
    @tool(requires_approval=True)
    def act(ctx: RunContext[Deps]) -> str:
        """Act."""
        return ctx.deps.user

    model = ScriptedModel([tool_call("act"), tool_call("respond_to_user", response="done")])
    bot = AgentBot(tools=[act], model=model)
    with pytest.raises(ApprovalRequired) as info:
        bot("act", deps=Deps("secret-holder", []))
    assert "secret-holder" not in info.value.paused.to_json()
    bot.resume(info.value, {info.value.requests[0].call_id: True}, deps=Deps("dee", []))
    results = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert results == ["dee"]


def test_api_deps_110_aot_atoms_get_the_runs_deps():
    deps = Deps("ann", [])
    plan = {"atoms": [{"id": 1, "kind": "tool", "name": "whoami", "input": {"greeting": "hello"}, "dependsOn": []},
                      {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    result = AoTBot(tools=[whoami], model=ScriptedModel([json.dumps(plan)]))("who?", deps=deps)
    assert result.answer == "hello ann"
    assert deps.seen[0].run_id == result.trace.trace_id

"""Composition from one import (API-GRAPH-010/020): the engine's and the agent layer's names from ``llamabot.agents``; FuncNode takes a
Tool, a ``@tool`` function or a plain typed function."""

from __future__ import annotations

from llamabot import tool
from llamabot.tools.tool import Tool


def test_api_graph_010_the_graph_names_come_from_one_import():
    from llamabot.agents import AsyncFlow, AsyncNode, DecideNode, Flow, FuncNode, GraphBot, Node

    assert all(callable(x) for x in (AsyncFlow, AsyncNode, DecideNode, Flow, FuncNode, GraphBot, Node))


def test_api_graph_020_funcnode_takes_a_tool_a_decorated_function_or_a_plain_function():
    from llamabot.agents import FuncNode

    def add(a: int, b: int) -> int:
        """Add.

        Args:
            a: One.
            b: Two.
        """
        return a + b

    decorated = tool(lambda_free_copy(add))
    for given in (add, decorated, decorated.tool):
        node = FuncNode(given)
        assert isinstance(node.tool, Tool)
        assert node.tool.name == "add"
        assert node.tool.func(a=2, b=3) == 5
    assert not hasattr(add, "tool")  # a plain function is described, not changed


def lambda_free_copy(func):
    def add(a: int, b: int) -> int:
        """Add.

        Args:
            a: One.
            b: Two.
        """
        return func(a, b)

    return add


# -- from_flow: a hand-made graph gets the whole surface (API-GRAPH-030..060) -----------------------------

import asyncio  # noqa: E402

import pytest  # noqa: E402

from llamabot import ApprovalRequired, Decision, RunContext, ScriptedModel, ToolBot, UsageLimits  # noqa: E402
from llamabot.agents import DecideNode, FlowBot, FuncNode, Node, from_flow  # noqa: E402
from llamabot.models.scripted import tool_call  # noqa: E402
from llamabot.observe.usage import UsageLimitExceeded  # noqa: E402
from llamabot.tools import respond_to_user  # noqa: E402


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: One.
        b: Two.
    """
    return a + b


def hand_made(model, *tools):
    """The notebook's custom graph: a decision over the given tools, each looping back."""
    tools = [add, respond_to_user, *tools]
    decide = DecideNode(ToolBot("Use the tools.", model=model, tools=tools), max_iterations=5)
    for t in tools:
        node = FuncNode(t)
        decide - node.name >> node
        node - "decide" >> decide
    decide - "decide" >> decide
    return decide


def add_then_answer() -> ScriptedModel:
    return ScriptedModel([tool_call("add", a=12, b=30), tool_call("respond_to_user", response="42")])


def test_api_graph_030_a_hand_made_agent_graph_runs_sync_with_trace_and_mermaid():
    bot = from_flow(hand_made(add_then_answer()))
    answer, trace = bot.run_sync("What is 12 plus 30?")
    assert answer == "42"
    assert [s.name for s in trace.spans if s.kind == "tool_call"] == ["add", "respond_to_user"]
    assert "add" in str(bot.to_mermaid())
    assert bot.last_trace is trace


async def test_api_graph_030_a_hand_made_agent_graph_runs_async_and_streams():
    bot = from_flow(hand_made(add_then_answer()))
    assert await bot.arun("q") == "42"
    bot = from_flow(hand_made(add_then_answer()))
    kinds = [event.kind async for event in bot.astream("q")]
    assert kinds[-1] == "final_answer" and "tool_started" in kinds


def test_api_graph_040_hooks_limits_deps_and_run_options_apply_to_a_hand_made_graph():
    ended = []

    class Ends:
        def on_tool_call_end(self, span, state):
            ended.append(span.name)

    from llamabot.observe.hooks import RunHooks

    hook = type("EndsHook", (Ends, RunHooks), {})()
    bot = from_flow(hand_made(add_then_answer()), hooks=[hook])
    bot("q")
    assert ended == ["add", "respond_to_user"]
    limited = from_flow(hand_made(add_then_answer()), usage_limits=UsageLimits(max_requests=1))
    with pytest.raises(UsageLimitExceeded):
        limited("q")
    with pytest.raises(TypeError, match="did you mean deps"):
        bot("q", dep=1)

    seen = []

    @tool
    def whose(ctx: RunContext[str]) -> str:
        """Whose run."""
        seen.append(ctx.deps)
        return ctx.deps

    model = ScriptedModel([tool_call("whose"), tool_call("respond_to_user", response="ok")])
    from_flow(hand_made(model, whose))("q", deps="mine")
    assert seen == ["mine"]


def test_api_graph_050_approvals_pause_and_resume_a_hand_made_graph():
    sent = []

    @tool(requires_approval=True)
    def pay(amount: float) -> str:
        """Pay.

        Args:
            amount: How much.
        """
        sent.append(amount)
        return "paid"

    model = ScriptedModel([tool_call("pay", amount=5), tool_call("respond_to_user", response="done")])
    bot = from_flow(hand_made(model, pay))
    with pytest.raises(ApprovalRequired) as info:
        bot("pay 5")
    assert sent == []
    assert bot.resume(info.value, {info.value.requests[0].call_id: Decision.approve()}) == "done"
    assert sent == [5.0]


def test_api_graph_050_checkpoints_continue_a_hand_made_graph_without_repeating_calls():
    calls = []

    @tool
    def count(n: int) -> int:
        """Count.

        Args:
            n: A number.
        """
        calls.append(n)
        return n

    model = ScriptedModel([tool_call("count", n=1), tool_call("respond_to_user", response="one")])
    bot = from_flow(hand_made(model, count))
    saved = []
    assert bot.run_sync("q", hooks=[bot.checkpoints(saved.append)])[0] == "one"
    after_count = [c for c in saved if c.node == "count"][-1]
    again = from_flow(hand_made(ScriptedModel([tool_call("respond_to_user", response="one")]), count))
    assert again.resume(after_count.to_json()) == "one"
    assert calls == [1]


def test_api_graph_060_any_flow_with_its_own_state_and_result():
    class Double(Node):
        def prep(self, shared):
            return shared["n"]

        def exec(self, n):
            return 2 * n

        def post(self, shared, prep_res, exec_res):
            shared["doubled"] = exec_res

    bot = from_flow(Double(), state=lambda q: {"n": q}, result="doubled")
    assert isinstance(bot, FlowBot)
    assert bot(21) == 42
    assert asyncio.run(bot.arun(4)) == 8
    assert from_flow(Double(), state=lambda q: {"n": q}, result=lambda s: s["doubled"] + 1)(1) == 3
    with pytest.raises(KeyError, match="'result'"):
        from_flow(Double(), state=lambda q: {"n": q})(1)
    with pytest.raises(TypeError, match="must return a dict"):
        from_flow(Double(), state=lambda q: [q])(1)
    with pytest.raises(TypeError, match="start node or a Flow"):
        from_flow("not a graph")

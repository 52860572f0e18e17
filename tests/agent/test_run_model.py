"""The one run model: hooks, the graph-bot surface shared by every pattern, and conversations that stay valid
for strict providers after any failure (AGT-RUN-*)."""

from __future__ import annotations

import asyncio
import json

import pytest

from llamabot import AgentBot, AsyncAgentBot, GraphBot, RunHooks, ScriptedModel, tool
from llamabot.agents.nodes import ToolExecutionError
from llamabot.graph.flow import AsyncFlow, DualNode, Flow
from llamabot.models.messages import UnansweredToolCallError, check_tool_call_answers
from llamabot.models.scripted import tool_call, tool_calls
from llamabot.reasoning.anot import AsyncANoTBot
from llamabot.reasoning.aot import AoTBot
from llamabot.reasoning.tot import ToTBot
from llamabot.toolkits.calculator import add, multiply


@tool
def echo(text: str) -> str:
    """Repeat the text.

    Args:
        text: what to repeat.
    """
    return text


@tool
def broken(x: int) -> int:
    """Always fails.

    Args:
        x: anything.
    """
    raise RuntimeError("broken on purpose")


class Recorder(RunHooks):
    """Every hook call, in order, as (method, span kind, span name)."""

    def __init__(self):
        self.calls: list[tuple[str, str, str]] = []
        self.tokens: list[str] = []

    def on_run_start(self, span, state):
        self.calls.append(("run_start", span.kind, span.name))

    def on_run_end(self, span, state):
        self.calls.append(("run_end", span.kind, span.name))

    def on_node_start(self, span, state):
        self.calls.append(("node_start", span.kind, span.name))

    def on_node_end(self, span, state):
        assert isinstance(state, dict)  # node hooks see the run's state
        self.calls.append(("node_end", span.kind, span.name))

    def on_model_call_start(self, span, state):
        self.calls.append(("model_start", span.kind, span.name))

    def on_model_call_end(self, span, state):
        self.calls.append(("model_end", span.kind, span.name))

    def on_tool_call_start(self, span, state):
        self.calls.append(("tool_start", span.kind, span.name))

    def on_tool_call_end(self, span, state):
        self.calls.append(("tool_end", span.kind, span.name))

    def on_token(self, span, delta):
        self.tokens.append(delta)


def test_agt_run_010_hooks_see_run_node_model_and_tool_call_starts_and_ends_in_order():
    recorder = Recorder()
    model = ScriptedModel([tool_call("add", a=1, b=2), tool_call("respond_to_user", response="3")])
    assert AgentBot(tools=[add], model=model, hooks=[recorder])("1+2") == "3"
    assert recorder.calls == [
        ("run_start", "run", "AgentBot"),
        ("node_start", "decision", "decision"), ("model_start", "model_call", "model_call"),
        ("model_end", "model_call", "model_call"), ("node_end", "decision", "decision"),
        ("tool_start", "tool_call", "add"), ("tool_end", "tool_call", "add"),
        ("node_start", "decision", "decision"), ("model_start", "model_call", "model_call"),
        ("model_end", "model_call", "model_call"), ("node_end", "decision", "decision"),
        ("tool_start", "tool_call", "respond_to_user"), ("tool_end", "tool_call", "respond_to_user"),
        ("run_end", "run", "AgentBot"),
    ]


def test_agt_run_015_hooks_given_to_one_run_are_told_only_about_that_run():
    recorder = Recorder()
    bot = AgentBot(model=ScriptedModel(responder=lambda r: tool_call("respond_to_user", response="ok")))
    bot("first")
    bot.run_sync("second", hooks=[recorder])
    bot("third")
    assert [c for c in recorder.calls if c[0] == "run_start"] == [("run_start", "run", "AgentBot")]


def test_agt_run_020_token_deltas_reach_hooks_and_astream():
    model = ScriptedModel(["The answer is 42"])
    recorder = Recorder()
    AgentBot(model=model, hooks=[recorder])("q")
    assert "".join(recorder.tokens) == "The answer is 42"

    async def stream():
        bot = AsyncAgentBot(model=ScriptedModel(["Forty two"]))
        return [e async for e in bot.astream("q")]

    events = asyncio.run(stream())
    assert "".join(e.data["delta"] for e in events if e.kind == "token") == "Forty two"
    assert events[-1].kind == "final_answer" and events[-1].data["result"] == "Forty two"


def test_agt_run_030_every_graph_bot_has_the_same_surface():
    bots = [AgentBot(model=ScriptedModel()), AoTBot(model=ScriptedModel()),
            ToTBot(model=ScriptedModel()), AsyncANoTBot(model=ScriptedModel(), debug=0)]
    for bot in bots:
        assert isinstance(bot, GraphBot)
        for name in ("__call__", "arun", "astream", "to_mermaid"):
            assert callable(getattr(bot, name)), (type(bot).__name__, name)
        assert bot.last_trace is None
        assert str(bot.to_mermaid()).startswith("flowchart")
    assert issubclass(AsyncAgentBot, AgentBot)


def test_agt_run_035_async_agent_bot_called_like_a_function_returns_the_runs_coroutine():
    bot = AsyncAgentBot(model=ScriptedModel([tool_call("respond_to_user", response="awaited")]))
    pending = bot("q")
    assert asyncio.iscoroutine(pending)
    assert asyncio.run(pending) == "awaited"


def test_agt_run_040_astream_works_on_every_pattern_and_ends_with_the_answer():
    from tests.reasoning.tot.helpers import oracle_model

    async def last_event():
        bot = ToTBot(model=oracle_model(), branching_factor=3, max_depth=3,
                     prompts=__import__("llamabot.evals.game24", fromlist=["Game24Prompts"]).Game24Prompts())
        events = [e async for e in bot.astream("4 9 10 13")]
        return events

    events = asyncio.run(last_event())
    assert {e.kind for e in events} >= {"node", "final_answer"}
    assert events[-1].kind == "final_answer" and events[-1].data["result"].termination.status == "completed"


def assert_valid_for_strict_providers(memory):
    check_tool_call_answers(memory)


def test_agt_run_050_a_tool_execution_error_with_queued_calls_leaves_every_call_answered():
    model = ScriptedModel([tool_calls(("broken", {"x": 1}), ("add", {"a": 1, "b": 2}))])
    bot = AgentBot(tools=[broken, add], model=model, max_errors=0)
    with pytest.raises(ToolExecutionError):
        bot("q")
    assert_valid_for_strict_providers(bot.memory)
    bot.decide_node.toolbot.model.queue(tool_call("respond_to_user", response="fine"))
    assert bot("again") == "fine"  # the next request on the same memory passes the scripted model's strict check


def test_agt_run_055_a_forced_reply_with_a_non_terminal_call_leaves_it_answered():
    model = ScriptedModel([tool_call("echo", text="a"), tool_calls(("echo", {"text": "b"}),
                                                                    ("respond_to_user", {"response": "done"}))])
    bot = AgentBot(tools=[echo], model=model, max_iterations=1)
    assert bot("q") == "done"
    assert_valid_for_strict_providers(bot.memory)
    not_run = [m for m in bot.memory if m["role"] == "tool" and m["content"].startswith("Not run")]
    assert len(not_run) == 1


def test_agt_run_060_a_forced_reply_that_raises_leaves_every_call_answered():
    model = ScriptedModel([tool_call("echo", text="a"), tool_call("echo", text="b")])
    bot = AgentBot(tools=[echo], model=model, max_iterations=1)
    with pytest.raises(RuntimeError, match="did not call"):
        bot("q")
    assert_valid_for_strict_providers(bot.memory)


def test_agt_run_065_the_strict_check_rejects_an_unanswered_call():
    memory = [{"role": "user", "content": "q"},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]},
              {"role": "user", "content": "next"}]
    with pytest.raises(UnansweredToolCallError, match="c1"):
        check_tool_call_answers(memory)


def test_agt_run_070_a_dual_node_that_writes_only_exec_runs_under_async_flow():
    class Double(DualNode):
        def prep(self, shared):
            return shared["x"]

        def exec(self, x):
            return 2 * x

        def post(self, shared, prep_res, exec_res):
            shared["y"] = exec_res

    shared = {"x": 21}
    asyncio.run(AsyncFlow(start=Double()).run_async(shared))
    assert shared["y"] == 42
    shared = {"x": 4}
    Flow(start=Double()).run(shared)
    assert shared["y"] == 8


def test_agt_run_080_agent_run_state_is_data_only_and_round_trips_through_json():
    from llamabot.graph.codec import dumps_state, loads_state

    states = []

    class Snapshot(RunHooks):
        def on_end(self, span, state):  # every node boundary: decisions and tool calls
            if state is None:
                return
            text = dumps_state(state)
            json.loads(text)
            states.append((text, state.copy()))

    model = ScriptedModel([tool_call("multiply", a=6, b=7), tool_call("respond_to_user", response="42")])
    AgentBot(tools=[multiply], model=model, hooks=[Snapshot()])("6*7")
    assert len(states) == 4
    for text, _ in states:
        assert dumps_state(loads_state(text)) == text


@tool
def slow_lookup(key: str) -> str:
    """A blocking lookup (0.2 s).

    Args:
        key: what to look up.
    """
    import time

    time.sleep(0.2)
    return key.upper()


def test_agt_run_090_sync_tools_run_off_the_event_loop_in_async_runs():
    import time

    def script(request):
        done = [m for m in request.messages if m["role"] == "tool"]
        if not done:
            return tool_call("slow_lookup", key="k")
        return tool_call("respond_to_user", response=done[-1]["content"])

    bot = AsyncAgentBot(tools=[slow_lookup], model=ScriptedModel(responder=script))

    async def ten():
        return await asyncio.gather(*(bot.arun(f"q{i}") for i in range(10)))

    started = time.perf_counter()
    answers = asyncio.run(ten())
    elapsed = time.perf_counter() - started
    assert answers == ["K"] * 10
    assert elapsed < 1.0, f"ten concurrent runs of a 0.2 s blocking tool took {elapsed:.2f} s (serialised: 2 s)"


def test_agt_run_095_a_tool_timeout_is_shown_to_the_model_as_the_tool_result():
    @tool(timeout=0.05)
    def stuck(x: int) -> int:
        """Never answers in time.

        Args:
            x: anything.
        """
        import time

        time.sleep(0.5)
        return x

    model = ScriptedModel([tool_call("stuck", x=1), tool_call("respond_to_user", response="gave up")])
    bot = AgentBot(tools=[stuck], model=model)
    assert bot("q") == "gave up"
    result = model.requests[1].messages[-1]
    assert result["role"] == "tool" and result["content"].startswith("Error: TimeoutError")

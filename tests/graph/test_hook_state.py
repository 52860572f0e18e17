"""Per-run hook state (HOOK-RUN-*): a hook registered on a bot keeps what it knows about a run in that run, so one
hook serves concurrent runs; hooks that need one step at a time say so (``sequential``), not by their class."""

from __future__ import annotations

import asyncio

from llamabot import AsyncAgentBot, ScriptedModel, tool
from llamabot.graph.checkpoint import Checkpoint
from llamabot.observe.hooks import RunHooks
from tests.agent.helpers import add_then_respond


@tool
def add(a: float, b: float) -> str:
    """Add.

    Args:
        a: One.
        b: Two.
    """
    return str(int(a + b))


async def test_hook_run_010_a_thousand_concurrent_checkpointed_runs_lose_no_checkpoint():
    saved: list[Checkpoint] = []
    bot = AsyncAgentBot(tools=[add], model=ScriptedModel(responder=add_then_respond, latency_s=0.002, record=False))
    bot.hooks = (bot.checkpoints(saved.append),)  # one hook on the bot, for every run
    answers = await asyncio.gather(*(bot.arun(f"add {i} and 1") for i in range(1000)))
    assert answers == [str(i + 1) for i in range(1000)]
    by_run: dict[str, list[Checkpoint]] = {}
    for checkpoint in saved:
        by_run.setdefault(checkpoint.trace_id, []).append(checkpoint)
    assert len(by_run) == 1000
    for checkpoints in by_run.values():  # each run: its own boundaries, numbered from 0 without a gap
        assert [c.step for c in checkpoints] == list(range(len(checkpoints)))
        assert [c.node for c in checkpoints] == ["decision", "add", "decision", "respond_to_user"]


async def test_hook_run_020_a_sequential_hook_of_any_class_turns_early_calls_off():
    from llamabot.models.scripted import tool_call, tool_calls

    started: list[str] = []

    class Watch(RunHooks):
        def on_tool_call_start(self, span, state):
            started.append(span.attributes.get("early", False))

    class Sequential(Watch):
        sequential = True

    def model():
        return ScriptedModel([tool_calls(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})),
                              tool_call("respond_to_user", response="done")])

    await AsyncAgentBot(tools=[add], model=model(), hooks=[Watch()]).arun("q")
    assert True in started  # without it, the second add starts early
    started.clear()
    await AsyncAgentBot(tools=[add], model=model(), hooks=[Sequential()]).arun("q")
    assert started == [False, False, False]


def test_hook_run_030_stateless_hooks_are_shared_and_stateful_ones_copied_per_run():
    plain = RunHooks()
    assert plain.for_run() is plain
    saved = []
    hook = AsyncAgentBot(tools=[add], model=ScriptedModel()).checkpoints(saved.append)
    fresh = hook.for_run()
    assert fresh is not hook and fresh.save is hook.save and (fresh.depth, fresh.steps) == (0, 0)


def test_hook_run_040_a_hook_list_is_checked_when_the_bot_is_made():
    import pytest

    from llamabot import AgentBot, SimpleBot
    from llamabot.observe.tracing import process_hooks, set_process_hooks

    def model():
        return ScriptedModel(responder=add_then_respond, record=False)

    with pytest.raises(TypeError, match=r"AgentBot: hooks\[1\] \(object\) is not a hook \(no for_run, on_start"):
        AgentBot(tools=[add], model=model(), hooks=[RunHooks(), object()])
    with pytest.raises(TypeError, match=r"hooks= takes a list of hooks, got RunHooks \(one hook: write hooks=\[hook\]\)"):
        AgentBot(tools=[add], model=model(), hooks=RunHooks())
    with pytest.raises(TypeError, match="SimpleBot: hooks= takes a list of hooks, got int"):
        SimpleBot("s", model=model(), hooks=5)
    with pytest.raises(TypeError, match=r"set_process_hooks: hooks\[0\] \(str\) is not a hook"):
        set_process_hooks(["otel"])
    assert process_hooks() == ()  # nothing was replaced
    seen: list[str] = []
    bot = AgentBot(tools=[add], model=model())
    with pytest.raises(TypeError, match=r"AgentBot run: hooks\[0\] \(object\) is not a hook"):
        bot("add 2 and 1", hooks=[object()])
    assert bot.last_trace is None  # refused before the run started

    class Duck:  # an object with a hook's methods is a hook
        def for_run(self):
            return self

        def on_start(self, span, state):
            seen.append(span.category)

        def on_end(self, span, state):
            pass

        def on_token(self, span, delta):
            pass

        def on_tool_call_delta(self, span, delta):
            pass

    assert bot("add 2 and 1", hooks=[Duck()]) == "3"
    assert seen[0] == "run"

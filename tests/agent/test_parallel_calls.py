"""Parallel tool calls in async agent runs (AGT-PAR-*): the independent calls of one reply run at once, bounded,
their results reach the model in its order; sync runs, checkpointed runs and calls that cannot run early keep
one call at a time."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel, tool
from llamabot.models.scripted import tool_call, tool_calls


class Gauge:
    """Counts the calls running at once."""

    def __init__(self):
        self.now = self.most = 0
        self.lock = threading.Lock()
        self.order: list[str] = []

    def enter(self, tag: str):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.order.append(f"start {tag}")

    def leave(self, tag: str):
        with self.lock:
            self.now -= 1
            self.order.append(f"end {tag}")


def async_tools(gauge: Gauge, delay: float = 0.05):
    @tool
    async def fetch(key: str) -> str:
        """Fetch a value.

        Args:
            key: Which value.
        """
        gauge.enter(key)
        try:
            await asyncio.sleep(delay)
        finally:
            gauge.leave(key)
        if key == "bad":
            raise KeyError(key)
        return f"value of {key}"

    return fetch


def reply(*keys: str, then: str | None = None):
    calls = [("fetch", {"key": k}) for k in keys]
    if then is not None:
        calls.append(("respond_to_user", {"response": then}))
    return tool_calls(*calls)


def tool_results(memory: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in memory if m["role"] == "tool"]


async def test_agt_par_010_calls_of_one_reply_run_at_once_and_their_results_keep_the_model_order():
    barrier = threading.Barrier(3, timeout=10)  # passes only when three calls wait on it at the same time

    @tool
    def slow(n: int) -> int:
        """A blocking tool.

        Args:
            n: A number.
        """
        barrier.wait()
        return n * 10

    model = ScriptedModel([tool_calls(("slow", {"n": 1}), ("slow", {"n": 2}), ("slow", {"n": 3})),
                           tool_call("respond_to_user", response="done")])
    memory: list[dict[str, Any]] = []
    answer, trace = await AsyncAgentBot(tools=[slow], model=model).arun_with_trace("q", memory=memory)
    assert answer == "done"
    assert tool_results(memory)[:3] == ["10", "20", "30"]  # in the order the model asked
    calls = model.requests[1].messages[2]["tool_calls"]
    assert [m["tool_call_id"] for m in model.requests[1].messages[3:6]] == [c["id"] for c in calls]
    # one tool_call span per call; the early ones are siblings of the first (same parent) and overlap in time
    spans = [s for s in trace.spans if s.kind == "tool_call" and s.name == "slow"]
    assert len(spans) == 3 and len({s.parent_id for s in spans}) == 1
    assert [s.attributes.get("early", False) for s in spans].count(True) == 2
    assert max(s.start for s in spans) < min(s.end for s in spans)
    assert sorted(s.attributes["result"] for s in spans) == [10, 20, 30]


async def test_agt_par_020_at_most_max_parallel_tools_calls_run_at_once():
    gauge = Gauge()
    model = ScriptedModel([reply("a", "b", "c", "d", "e"), tool_call("respond_to_user", response="ok")])
    bot = AsyncAgentBot(tools=[async_tools(gauge)], model=model, max_parallel_tools=2)
    assert await bot.arun("q") == "ok"
    assert gauge.most == 2
    gauge = Gauge()
    model = ScriptedModel([reply("a", "b", "c", "d", "e"), tool_call("respond_to_user", response="ok")])
    assert await AsyncAgentBot(tools=[async_tools(gauge)], model=model).arun("q") == "ok"
    assert gauge.most == 5


async def test_agt_par_030_sync_runs_and_a_limit_of_one_keep_one_call_at_a_time():
    gauge = Gauge()

    @tool
    def step(key: str) -> str:
        """A step.

        Args:
            key: Which.
        """
        gauge.enter(key)
        gauge.leave(key)
        return key

    script = [tool_calls(("step", {"key": "a"}), ("step", {"key": "b"}), ("step", {"key": "c"})),
              tool_call("respond_to_user", response="ok")]
    assert AgentBot(tools=[step], model=ScriptedModel(list(script)))("q") == "ok"
    assert gauge.order == ["start a", "end a", "start b", "end b", "start c", "end c"]
    gauge = Gauge()
    slow = async_tools(gauge)
    model = ScriptedModel([reply("a", "b", "c"), tool_call("respond_to_user", response="ok")])
    assert await AsyncAgentBot(tools=[slow], model=model, max_parallel_tools=1).arun("q") == "ok"
    assert gauge.most == 1


async def test_agt_par_040_a_terminal_call_waits_its_turn_and_the_calls_after_it_never_run():
    gauge = Gauge()
    model = ScriptedModel([tool_calls(("fetch", {"key": "a"}), ("fetch", {"key": "b"}),
                                      ("respond_to_user", {"response": "early end"}), ("fetch", {"key": "c"}))])
    memory: list[dict[str, Any]] = []
    assert await AsyncAgentBot(tools=[async_tools(gauge)], model=model).arun("q", memory=memory) == "early end"
    assert gauge.most == 2 and "start c" not in gauge.order
    assert tool_results(memory) == ["value of a", "value of b", "early end",
                                    "Not run: the run ended with respond_to_user."]


async def test_agt_par_050_a_failing_call_is_shown_to_the_model_in_its_place():
    gauge = Gauge()
    model = ScriptedModel([reply("a", "bad", "c"), tool_call("respond_to_user", response="ok")])
    memory: list[dict[str, Any]] = []
    answer, trace = await AsyncAgentBot(tools=[async_tools(gauge)], model=model).arun_with_trace(
        "q", memory=memory)
    assert answer == "ok" and gauge.most == 3
    assert tool_results(memory)[:3] == ["value of a", "Error: KeyError: 'bad'", "value of c"]
    failed = [s for s in trace.spans if s.kind == "tool_call" and s.error]
    assert len(failed) == 1 and failed[0].attributes["arguments"] == {"key": "bad"}


def hang_and_broken(*waits: asyncio.Event):
    """``hang`` (sets its ``started`` event, then waits a minute; ``cancelled`` is set if it is cancelled) and
    ``broken`` (fails once ``started`` and every one of ``waits`` are set): ``(hang, broken, started, cancelled)``."""
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def hang(key: str) -> str:
        """Never returns.

        Args:
            key: Which.
        """
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return key

    @tool
    async def broken(key: str) -> str:
        """Fails once the others started.

        Args:
            key: Which.
        """
        for event in (started, *waits):
            await event.wait()
        raise RuntimeError("broken for good")

    return hang, broken, started, cancelled


async def test_agt_par_060_when_the_run_fails_calls_still_running_early_are_cancelled():
    hang, broken, _, cancelled = hang_and_broken()
    model = ScriptedModel([tool_calls(("broken", {"key": "x"}), ("hang", {"key": "y"}))])
    bot = AsyncAgentBot(tools=[hang, broken], model=model, max_errors=0)
    with pytest.raises(Exception, match="broken for good"):
        await asyncio.wait_for(bot.arun("q"), timeout=10)
    await asyncio.wait_for(cancelled.wait(), timeout=5)


async def test_agt_par_065_when_the_run_fails_the_conversation_says_what_early_calls_did():
    from llamabot.agents.agent_state import STOPPED

    finished = asyncio.Event()

    @tool
    async def quick(key: str) -> str:
        """Returns at once.

        Args:
            key: Which.
        """
        finished.set()
        return f"sent {key}"

    hang, broken, _, cancelled = hang_and_broken(finished)
    model = ScriptedModel([tool_calls(("broken", {"key": "x"}), ("quick", {"key": "y"}), ("hang", {"key": "z"}))])
    memory: list[dict[str, Any]] = []
    with pytest.raises(Exception, match="broken for good"):
        await asyncio.wait_for(AsyncAgentBot(tools=[quick, hang, broken], model=model, max_errors=0).arun(
            "q", memory=memory), timeout=10)
    assert tool_results(memory) == ["Error: RuntimeError: broken for good", "sent y", STOPPED]
    await asyncio.wait_for(cancelled.wait(), timeout=5)


async def test_agt_par_070_checkpointed_runs_and_tools_with_hidden_parameters_run_one_at_a_time():
    gauge = Gauge()
    fetch = async_tools(gauge)
    saved = []
    model = ScriptedModel([reply("a", "b", "c"), tool_call("respond_to_user", response="ok")])
    bot = AsyncAgentBot(tools=[fetch], model=model)
    assert await bot.arun("q", hooks=[bot.checkpoints(saved.append)]) == "ok"
    assert gauge.most == 1 and saved

    seen = Gauge()

    @tool
    async def look(key: str, _memory: list | None = None) -> int:
        """Count the conversation.

        Args:
            key: Which.
        """
        seen.enter(key)
        await asyncio.sleep(0.02)
        seen.leave(key)
        return len(_memory or [])

    model = ScriptedModel([tool_calls(("look", {"key": "a"}), ("look", {"key": "b"})),
                           tool_call("respond_to_user", response="ok")])
    memory: list[dict[str, Any]] = []
    assert await AsyncAgentBot(tools=[look], model=model).arun("q", memory=memory) == "ok"
    assert seen.most == 1
    assert tool_results(memory)[:2] == ["2", "3"]  # each saw the results before it, as in a sequential run


def test_agt_par_080_the_limit_must_be_a_whole_number_of_at_least_one():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="parallel tool call limit"):
            AgentBot(max_parallel_tools=bad, model=ScriptedModel([]))

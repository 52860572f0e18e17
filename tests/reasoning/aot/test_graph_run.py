"""AoT as graph work (AOT-RUN-*): the planner is a decision-kind node, atoms are tool calls that the run's hooks
and ``astream`` see live (in parallel within a layer on the async path), execution walks the plan's layers as
node steps, and the run's state is data that round-trips through the state codec at every node boundary."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from loguru import logger

from llamabot import tool
from llamabot.graph.checkpoint import Checkpoint
from llamabot.graph.codec import dumps_state, loads_state
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import current_span
from llamabot.reasoning.aot import AoTBot, AsyncAoTBot, AtomExecutionError
from llamabot.reasoning.aot.prompts import EXAMPLE_PLAN

QUESTION = "What is (15 + 7) * 3 - 10?"  # the numbers its plans write (AoT checks them)

BAD = {"atoms": [{"id": 1, "kind": "tool", "name": "sqrt", "input": {"x": 4}, "dependsOn": []}]}

#: Two layers of two atoms, then the final: (1, 2) -> (3, 4) -> 5.
WIDE = {"atoms": [
    {"id": 1, "kind": "tool", "name": "add", "input": {"a": 1, "b": 2}, "dependsOn": []},
    {"id": 2, "kind": "tool", "name": "add", "input": {"a": 3, "b": 4}, "dependsOn": []},
    {"id": 3, "kind": "tool", "name": "multiply", "input": {"a": "<result_of_1>", "b": 2}, "dependsOn": [1]},
    {"id": 4, "kind": "tool", "name": "multiply", "input": {"a": "<result_of_2>", "b": 2}, "dependsOn": [2]},
    {"id": 5, "kind": "final", "name": "report", "dependsOn": [3, 4]},
]}


class Recorder(RunHooks):
    """Every span start and end, in order; at every node end with a state, that the state round-trips."""

    def __init__(self):
        self.events: list[tuple[str, str, str, str]] = []  # (start|end, category, kind, name)
        self.boundaries: list[tuple[str, str | None, list[str]]] = []  # (node, action, state keys)

    def on_start(self, span, state):
        self.events.append(("start", span.category, span.kind, span.name))

    def on_end(self, span, state):
        self.events.append(("end", span.category, span.kind, span.name))
        if state is not None:
            restored = loads_state(dumps_state(state))
            assert restored == state, f"state after {span.name} does not round-trip"
            assert type(restored["record"]) is type(state["record"])
            self.boundaries.append((span.name, span.attributes.get("action"), sorted(state)))


STATE_KEYS = sorted(["memory", "plan", "notes", "plan_errors", "parse_failures", "execution_failures", "record", "layer",
                     "samples", "drafts", "vote"])


@pytest.mark.parametrize("path", ["sync", "async"])
def test_aot_run_010_the_state_round_trips_through_the_codec_at_every_node_boundary(path):
    model = ScriptedModel([json_reply(BAD), json_reply(WIDE)])
    recorder = Recorder()
    bot = AoTBot(expressions=False, model=model, hooks=[recorder])
    result = bot(QUESTION) if path == "sync" else asyncio.run(bot.arun(QUESTION))
    assert result.answer == {3: 6.0, 4: 14.0} and result.replans == 1
    assert [(node, action) for node, action, _ in recorder.boundaries] == [
        ("plan", "invalid"), ("plan", "valid"), ("execute", "layer"), ("execute", "done"), ("report", None),
    ]
    assert all(keys == STATE_KEYS for _, _, keys in recorder.boundaries)


def test_aot_run_010_the_state_round_trips_on_the_failure_path_too():
    log: list[str] = []

    @tool
    def book(item: str) -> str:
        """Book an item."""
        return f"booking-{item}"

    @tool
    def cancel(result: str) -> str:
        """Cancel a booking."""
        log.append(result)
        return "cancelled"

    @tool
    def pay(amount: float) -> str:
        """Always fails."""
        raise RuntimeError("card declined")

    plan = {"atoms": [
        {"id": 1, "kind": "tool", "name": "book", "input": {"item": "flight"}, "dependsOn": []},
        {"id": 2, "kind": "tool", "name": "book", "input": {"item": "hotel"}, "dependsOn": [1]},
        {"id": 3, "kind": "tool", "name": "pay", "input": {"amount": 10}, "dependsOn": [2]},
        {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
    ]}
    recorder = Recorder()
    bot = AoTBot([book, pay], model=ScriptedModel([json_reply(plan)]), compensations={"book": cancel}, hooks=[recorder],
                 max_execution_replans=0)
    with pytest.raises(AtomExecutionError, match="card declined") as info:
        bot(QUESTION)
    assert [(n, a) for n, a, _ in recorder.boundaries] == [
        ("plan", "valid"), ("execute", "layer"), ("execute", "layer"), ("execute", "failed"), ("compensate", None),
    ]  # the compensate step ends with the error; its state round-trips too (a checkpoint hook skips it)
    assert bot.last_trace.of_kind("compensate")[0].error.startswith("AtomExecutionError")
    assert log == ["booking-hotel", "booking-flight"]  # compensated newest first, by the compensate node
    compensations = bot.last_trace.of_kind("compensation")
    assert [s.name for s in compensations] == ["2:cancel", "1:cancel"]
    assert {s.category for s in compensations} == {"tool_call"}
    assert [e[3] for e in recorder.events if e[1] == "tool_call" and e[0] == "end"] == [
        "1:book", "2:book", "3:pay", "2:cancel", "1:cancel"]
    assert info.value.record.atoms[1].status == "compensated" and info.value.record.failed_atom == 3


def test_aot_run_020_hooks_see_each_atom_as_a_tool_call_inside_its_layer_step():
    recorder = Recorder()
    result = AoTBot(expressions=False, model=ScriptedModel([json_reply(EXAMPLE_PLAN)]), hooks=[recorder])(QUESTION)
    steps = [(e[0], e[2], e[3]) for e in recorder.events if e[1] in ("node", "tool_call")]
    assert steps == [
        ("start", "decision", "plan"), ("end", "decision", "plan"),
        ("start", "layer", "execute"), ("start", "atom", "1:add"), ("end", "atom", "1:add"), ("end", "layer", "execute"),
        ("start", "layer", "execute"), ("start", "atom", "2:multiply"), ("end", "atom", "2:multiply"),
        ("end", "layer", "execute"),
        ("start", "layer", "execute"), ("start", "atom", "3:subtract"), ("end", "atom", "3:subtract"),
        ("end", "layer", "execute"),
        ("start", "report", "report"), ("end", "report", "report"),
    ]
    trace = result.trace
    layers = trace.of_kind("layer")
    for layer, atom in zip(layers, trace.of_kind("atom"), strict=True):  # each atom is a child of its layer step
        assert atom.parent_id == layer.span_id and layer.attributes["atoms"] == [atom.attributes["atom"]]
    [plan] = trace.of_kind("decision")
    assert plan.name == "plan" and plan.attributes["calls"] == ["1:add", "2:multiply", "3:subtract"]
    assert plan.attributes["action"] == "valid" and plan.attributes["iteration"] == 1
    assert trace.of_kind("model_call")[0].parent_id == plan.span_id


def test_aot_run_030_on_the_async_path_the_atoms_of_a_layer_run_as_concurrent_tool_calls():
    @tool
    async def slow(x: int) -> int:
        """Sleeps 50 ms."""
        await asyncio.sleep(0.05)
        return x

    threads: dict[int, tuple[str, str | None]] = {}

    @tool
    def blocking(x: int) -> int:
        """Blocks 50 ms in a worker thread; notes which span is active there."""
        active = current_span()
        threads[x] = (threading.current_thread().name, active.name if active else None)
        time.sleep(0.05)
        return x

    atoms = [{"id": i, "kind": "tool", "name": "slow", "input": {"x": i}, "dependsOn": []} for i in range(1, 5)]
    atoms += [{"id": i, "kind": "tool", "name": "blocking", "input": {"x": f"<result_of_{i - 4}>"},
               "dependsOn": [i - 4]} for i in range(5, 9)]
    atoms.append({"id": 9, "kind": "final", "name": "report", "dependsOn": list(range(5, 9))})
    recorder = Recorder()
    bot = AsyncAoTBot([slow, blocking], model=ScriptedModel([json_reply({"atoms": atoms})]), hooks=[recorder])
    started = time.perf_counter()
    result = asyncio.run(bot.arun(QUESTION))
    assert time.perf_counter() - started < 0.35  # 8 x 50 ms would be 0.4 s in sequence
    assert result.answer == {5: 1, 6: 2, 7: 3, 8: 4}
    calls = [(e[0], e[3]) for e in recorder.events if e[1] == "tool_call"]
    # every atom of a layer starts before any of them ends: they are in flight together
    assert [c[0] for c in calls] == ["start"] * 4 + ["end"] * 4 + ["start"] * 4 + ["end"] * 4
    trace = result.trace
    layers = trace.of_kind("layer")
    atom_spans = trace.of_kind("atom")
    assert all(s.parent_id == layers[0].span_id for s in atom_spans[:4])  # siblings, not nested in each other
    assert all(s.parent_id == layers[1].span_id for s in atom_spans[4:])
    # blocking tools run in worker threads, where the atom's own span is the active one
    assert {x: span_name for x, (_, span_name) in threads.items()} == {1: "5:blocking", 2: "6:blocking",
                                                                       3: "7:blocking", 4: "8:blocking"}
    assert all(thread.startswith("aot") for thread, _ in threads.values())  # the run's own pool


def test_aot_run_040_astream_reports_the_plan_decision_and_every_atom_as_it_runs():
    async def stream():
        bot = AsyncAoTBot(expressions=False, model=ScriptedModel([json_reply(BAD), json_reply(WIDE)]))
        return [e async for e in bot.astream(QUESTION)]

    events = asyncio.run(stream())
    kinds = [e.kind for e in events]
    decisions = [e.data for e in events if e.kind == "decision"]
    assert decisions[0]["calls"] == [] and "unknown tool 'sqrt'" in decisions[0]["errors"][0]
    assert decisions[1] == {"calls": ["1:add", "2:add", "3:multiply", "4:multiply"], "errors": [], "iteration": 2}
    started = [e.data for e in events if e.kind == "tool_started"]
    finished = [e.data for e in events if e.kind == "tool_finished"]
    assert [d["tool"] for d in started] == ["1:add", "2:add", "3:multiply", "4:multiply"]
    assert started[2]["arguments"] == {"a": 3.0, "b": 2}
    assert sorted((d["tool"], d["result"]) for d in finished) == [("1:add", 3.0), ("2:add", 7.0),
                                                                 ("3:multiply", 6.0), ("4:multiply", 14.0)]
    assert kinds.index("tool_finished") < max(i for i, k in enumerate(kinds) if k == "tool_started")  # live
    nodes = [(e.data["node"], e.data["action"]) for e in events if e.kind == "node"]
    assert nodes == [("execute", "layer"), ("execute", "done"), ("report", None)]
    assert events[-1].kind == "final_answer" and events[-1].data["result"].answer == {3: 6.0, 4: 14.0}


def test_aot_run_050_the_plan_decision_and_repairs_are_logged_at_debug_level():
    lines: list[str] = []
    sink = logger.add(lines.append, level="DEBUG", format="{message}")
    logger.enable("llamabot")  # the library is silent until the user opts in
    try:
        AoTBot(expressions=False, model=ScriptedModel([json_reply(BAD), json_reply(EXAMPLE_PLAN)]))(QUESTION)
    finally:
        logger.disable("llamabot")
        logger.remove(sink)
    assert any(line.startswith("plan 1: invalid, re-planning with 1 problems") and "sqrt" in line for line in lines)
    assert any(line.startswith("plan 2: valid, 4 atoms in 4 layers") for line in lines)
    assert any(line.startswith("layer 1: 2:multiply = 66") for line in lines)


def test_aot_run_060_a_run_resumed_after_a_layer_does_not_repeat_its_atoms():
    calls: list[tuple[float, float]] = []

    @tool
    def add(a: float, b: float) -> float:
        """Add two numbers.

        Args:
            a: first.
            b: second.
        """
        calls.append((a, b))
        return a + b

    from llamabot.toolkits.calculator import multiply

    def make():
        return AoTBot([add, multiply], model=ScriptedModel(responder=lambda request: json_reply(WIDE)))

    bot = make()
    saved: list[Checkpoint] = []
    result = bot.run_sync(QUESTION, hooks=[bot.checkpoints(saved.append)])[0]
    after_first_layer = next(c for c in saved if c.node == "execute")
    assert calls == [(1, 2), (3, 4)]
    calls.clear()
    resumed = make().resume(Checkpoint.from_json(after_first_layer.to_json()))
    assert resumed.answer == result.answer and calls == []  # layer 0 (the adds) ran before the checkpoint
    assert [s.name for s in resumed.trace.of_kind("atom")] == ["3:multiply", "4:multiply"]

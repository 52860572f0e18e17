"""Plan execution without any model: layers, references, failures, retries, compensation, persistence."""

from __future__ import annotations

import asyncio
import time

import pytest

from llamabot import tool
from llamabot.reasoning.aot import (
    AtomExecutionError,
    ExecutionRecord,
    Plan,
    RetryPolicy,
    aexecute_plan,
    execute_plan,
    execution_layers,
    plan_to_mermaid,
    replay_plan,
    validate_plan,
)
from llamabot.toolkits.calculator import CALCULATOR_TOOLS
from llamabot.toolkits.decisions import DECISION_TOOLS
from llamabot.tools import Retry

TOOLS = {t.tool.name: t.tool for t in CALCULATOR_TOOLS}
DECISIONS = {t.tool.name: t.tool for t in DECISION_TOOLS}
SEED_PLAN = {"atoms": [
    {"id": 1, "kind": "tool", "name": "add", "input": {"a": 15, "b": 7}},
    {"id": 2, "kind": "tool", "name": "multiply", "input": {"a": "<result_of_1>", "b": 3}},
    {"id": 3, "kind": "tool", "name": "subtract", "input": {"a": "<result_of_2>", "b": 10}},
    {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
]}


def valid(data: dict, tools=TOOLS) -> Plan:
    return validate_plan(Plan.model_validate(data), tools, DECISIONS)[0]


def test_aot_exec_010_the_seed_example_executes_deterministically():
    record = execute_plan(valid(SEED_PLAN), TOOLS)
    assert record.answer == 56 and record.status == "ok"
    assert [record.atoms[i].inputs for i in (1, 2, 3)] == [{"a": 15, "b": 7}, {"a": 22.0, "b": 3}, {"a": 66.0, "b": 10}]
    assert all(record.atoms[i].duration_s >= 0 and record.atoms[i].attempts == 1 for i in (1, 2, 3))
    assert execute_plan(valid(SEED_PLAN), TOOLS).answer == record.answer


def test_aot_exec_020_atoms_run_in_topological_layers_not_id_order():
    # ids need not follow the order of execution: layers come from the dependencies
    p = Plan.model_validate({"atoms": [
        {"id": 5, "kind": "tool", "name": "add", "input": {"a": 1, "b": 1}},
        {"id": 2, "kind": "tool", "name": "add", "input": {"a": "<result_of_5>", "b": 1}},
        {"id": 9, "kind": "tool", "name": "add", "input": {"a": 10, "b": 0}},
        {"id": 1, "kind": "final", "name": "report", "dependsOn": [2, 9]},
    ]})
    p = validate_plan(p, TOOLS)[0]
    assert [[a.id for a in layer] for layer in execution_layers(p)] == [[5, 9], [2], [1]]
    assert execute_plan(p, TOOLS).answer == {2: 3.0, 9: 10.0}  # a final reports all its dependencies


def test_aot_exec_030_references_resolve_inside_lists_and_text():
    p = valid({"atoms": [
        {"id": 1, "kind": "tool", "name": "add", "input": {"a": 1, "b": 2}},
        {"id": 2, "kind": "tool", "name": "add", "input": {"a": 3, "b": 4}},
        {"id": 3, "kind": "decision", "name": "average", "input": {"values": ["<result_of_1>", "<result_of_2>"]}},
        {"id": 4, "kind": "decision", "name": "choose_cheapest", "input": {"options": ["a <result_of_1>", "b"], "prices": ["<result_of_2>", 9]}},
        {"id": 5, "kind": "final", "name": "report", "dependsOn": [3, 4]},
    ]})
    assert execute_plan(p, TOOLS, DECISIONS).answer == {3: 5.0, 4: "a 3"}


def test_aot_exec_040_failure_stops_at_the_atom_naming_tool_inputs_and_cause_and_keeps_partial_state():
    p = valid({"atoms": [
        {"id": 1, "kind": "tool", "name": "subtract", "input": {"a": 5, "b": 5}},
        {"id": 2, "kind": "tool", "name": "divide", "input": {"a": 10, "b": "<result_of_1>"}},
        {"id": 3, "kind": "tool", "name": "add", "input": {"a": "<result_of_2>", "b": 1}},
        {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
    ]})
    with pytest.raises(AtomExecutionError) as info:
        execute_plan(p, TOOLS)
    err = info.value
    assert err.atom.id == 2 and err.inputs == {"a": 10, "b": 0.0} and "ZeroDivisionError" in err.cause
    assert "atom 2 (tool 'divide')" in str(err)
    record = err.record
    assert record.status == "failed" and record.failed_atom == 2
    assert record.atoms[1].status == "ok" and record.atoms[1].result == 0.0  # nothing computed is lost
    assert record.atoms[3].status == "not_run"


def test_aot_exec_050_retries_per_atom_and_by_policy():
    calls = {"n": 0}

    @tool
    def flaky(x: int) -> int:
        """Fails twice, then works."""
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("try again")
        return x

    tools = {"flaky": flaky.tool}
    data = {"atoms": [{"id": 1, "kind": "tool", "name": "flaky", "input": {"x": 7}}, {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    with pytest.raises(AtomExecutionError, match="try again"):
        execute_plan(valid(data, tools), tools)  # no retries by default
    calls["n"] = 0
    record = execute_plan(valid(data, tools), tools, retry=RetryPolicy(retries=2))
    assert record.answer == 7 and record.atoms[1].attempts == 3
    calls["n"] = 0
    data["atoms"][0]["retries"] = 1  # the atom's own policy wins: 2 attempts are not enough
    with pytest.raises(AtomExecutionError) as info:
        execute_plan(valid(data, tools), tools, retry=RetryPolicy(retries=5))
    assert info.value.record.atoms[1].attempts == 2


def test_aot_exec_060_completed_atoms_are_compensated_in_reverse_order_on_failure():
    log: list[str] = []

    @tool
    def book(item: str) -> str:
        """Book an item."""
        log.append(f"book {item}")
        return f"booking-{item}"

    @tool
    def cancel(result: str) -> str:
        """Cancel a booking."""
        log.append(f"cancel {result}")
        return "cancelled"

    @tool
    def pay(amount: float) -> str:
        """Pay (always fails here)."""
        raise RuntimeError("card declined")

    tools = {t.tool.name: t.tool for t in (book, cancel, pay)}
    p = valid({"atoms": [
        {"id": 1, "kind": "tool", "name": "book", "input": {"item": "flight"}},
        {"id": 2, "kind": "tool", "name": "book", "input": {"item": "hotel"}, "dependsOn": [1]},
        {"id": 3, "kind": "tool", "name": "pay", "input": {"amount": 10}, "dependsOn": [2]},
        {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
    ]}, tools)
    with pytest.raises(AtomExecutionError, match="card declined") as info:
        execute_plan(p, tools, compensations={"book": cancel.tool})
    assert log == ["book flight", "book hotel", "cancel booking-hotel", "cancel booking-flight"]
    record = info.value.record
    assert [record.atoms[i].status for i in (1, 2, 3)] == ["compensated", "compensated", "failed"]
    assert record.atoms[2].compensation == "cancel: ok"


async def test_aot_exec_070_atoms_of_a_layer_run_concurrently_on_the_async_path():
    @tool
    async def slow(x: int) -> int:
        """Sleeps 50 ms."""
        await asyncio.sleep(0.05)
        return x

    @tool
    def blocking(x: int) -> int:
        """Blocks 50 ms (runs in a worker thread)."""
        time.sleep(0.05)
        return x

    for t in (slow, blocking):
        tools = {t.tool.name: t.tool}
        atoms = [{"id": i, "kind": "tool", "name": t.tool.name, "input": {"x": i}} for i in range(1, 9)]
        atoms.append({"id": 9, "kind": "final", "name": "report", "dependsOn": list(range(1, 9))})
        started = time.perf_counter()
        record = await aexecute_plan(valid({"atoms": atoms}, tools), tools)
        assert time.perf_counter() - started < 0.3  # 8 x 50 ms would be 0.4 s in sequence
        assert record.answer == {i: i for i in range(1, 9)}


async def test_aot_exec_070_the_async_path_reports_the_lowest_failing_atom_of_a_layer():
    p = valid({"atoms": [
        {"id": 1, "kind": "tool", "name": "divide", "input": {"a": 1, "b": 0}},
        {"id": 2, "kind": "tool", "name": "divide", "input": {"a": 2, "b": 0}},
        {"id": 3, "kind": "tool", "name": "add", "input": {"a": 1, "b": 1}},
        {"id": 4, "kind": "final", "name": "report", "dependsOn": [1, 2, 3]},
    ]})
    with pytest.raises(AtomExecutionError) as info:
        await aexecute_plan(p, TOOLS)
    assert info.value.atom.id == 1 and info.value.record.atoms[3].status == "ok"


def test_aot_exec_080_plans_and_records_persist_as_json_and_re_execute_without_a_model(tmp_path):
    record = execute_plan(valid(SEED_PLAN), TOOLS)
    path = tmp_path / "run.json"
    record.to_json(path)
    loaded = ExecutionRecord.from_dict(__import__("json").loads(path.read_text()))
    assert loaded.answer == 56 and loaded.atoms[2].result == 66.0
    assert replay_plan(path).answer == 56  # the saved record's plan runs again
    plan_path = tmp_path / "plan.json"
    Plan.load(SEED_PLAN).to_json(plan_path)
    assert replay_plan(plan_path).answer == 56


def test_aot_viz_010_the_atom_graph_renders_as_mermaid_with_results():
    record = execute_plan(valid(SEED_PLAN), TOOLS)
    source = plan_to_mermaid(record.plan, record)
    assert 'a1["1: add = 22"]' in source and "a2 --> a3" in source and 'a4(["4: final = 56"])' in source
    assert "class a3 ok" in source
    assert "classDef" not in plan_to_mermaid(record.plan)


async def test_aot_exec_060_async_compensation_order_is_the_reverse_plan_order_whatever_finishes_first():
    log: list[str] = []

    @tool
    async def step(x: int, delay: float) -> int:
        """Sleep, then return x."""
        await asyncio.sleep(delay)
        return x

    @tool
    def undo(x: int) -> str:
        """Undo a step."""
        log.append(f"undo {x}")
        return "ok"

    @tool
    def boom(x: int) -> int:
        """Always fails."""
        raise RuntimeError("boom")

    tools = {t.tool.name: t.tool for t in (step, undo, boom)}
    p = valid({"atoms": [
        {"id": 1, "kind": "tool", "name": "step", "input": {"x": 1, "delay": 0.03}},
        {"id": 2, "kind": "tool", "name": "step", "input": {"x": 2, "delay": 0.0}},
        {"id": 3, "kind": "tool", "name": "boom", "input": {"x": "<result_of_1>"}},
        {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
    ]}, tools)
    with pytest.raises(AtomExecutionError):
        await aexecute_plan(p, tools, compensations={"step": undo.tool})
    assert log == ["undo 2", "undo 1"]  # atom 2 finished first, but plan order decides


def test_aot_exec_050_the_tools_own_retry_policy_applies_when_the_plan_sets_none():
    calls: list[int] = []

    @tool(retry=Retry(attempts=3, backoff_s=0))
    def flaky(x: int) -> int:
        """Fails twice, then works."""
        calls.append(x)
        if len(calls) < 3:
            raise ConnectionError("try again")
        return x

    tools = {"flaky": flaky.tool}
    data = {"atoms": [{"id": 1, "kind": "tool", "name": "flaky", "input": {"x": 7}}, {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    record = execute_plan(valid(data, tools), tools)
    assert record.answer == 7 and record.atoms[1].attempts == 3
    calls.clear()
    data["atoms"][0]["retries"] = 0  # the atom's own policy wins over the tool's
    with pytest.raises(AtomExecutionError) as info:
        execute_plan(valid(data, tools), tools)
    assert info.value.record.atoms[1].attempts == 1


async def test_aot_exec_050_backoff_between_attempts_does_not_block_the_async_path():
    calls: list[int] = []

    @tool
    def flaky(x: int) -> int:
        """Fails twice, then works."""
        calls.append(x)
        if len(calls) < 3:
            raise ConnectionError("try again")
        return x

    tools = {"flaky": flaky.tool}
    data = {"atoms": [{"id": 1, "kind": "tool", "name": "flaky", "input": {"x": 7}}, {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    ticks: list[int] = []

    async def ticker() -> None:
        while True:
            ticks.append(1)
            await asyncio.sleep(0.01)

    ticking = asyncio.ensure_future(ticker())
    try:
        record = await aexecute_plan(valid(data, tools), tools, retry=RetryPolicy(retries=2, backoff_s=0.1))
    finally:
        ticking.cancel()
    assert record.answer == 7 and record.atoms[1].attempts == 3 and record.atoms[1].duration_s >= 0.2
    assert len(ticks) >= 10


@pytest.mark.parametrize("path", ["sync", "async"])
def test_aot_exec_090_a_tool_that_exceeds_its_timeout_fails_its_atom(path):
    @tool(timeout=0.05)
    def hangs(x: int) -> int:
        """Blocks far longer than its timeout."""
        time.sleep(1)
        return x

    tools = {"hangs": hangs.tool}
    p = valid({"atoms": [{"id": 1, "kind": "tool", "name": "hangs", "input": {"x": 1}}, {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}, tools)
    started = time.perf_counter()
    with pytest.raises(AtomExecutionError) as info:
        execute_plan(p, tools) if path == "sync" else asyncio.run(aexecute_plan(p, tools))
    assert time.perf_counter() - started < 0.9
    assert info.value.cause == "TimeoutError: tool 'hangs' did not finish within 0.05 s"


def test_aot_exec_100_an_async_tool_in_the_sync_path_fails_once_pointing_to_aexecute_plan():
    @tool
    async def later(x: int) -> int:
        """Async."""
        return x

    tools = {"later": later.tool}
    p = valid({"atoms": [{"id": 1, "kind": "tool", "name": "later", "input": {"x": 1}}, {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}, tools)
    with pytest.raises(AtomExecutionError) as info:
        execute_plan(p, tools, retry=RetryPolicy(retries=3))
    assert "is async" in info.value.cause and "aexecute_plan" in info.value.cause
    assert info.value.record.atoms[1].attempts == 1


def test_aot_exec_110_invalid_resolved_inputs_fail_the_atom_listing_the_problems_without_an_attempt():
    p = valid({"atoms": [
        {"id": 1, "kind": "decision", "name": "choose_cheapest", "input": {"options": ["a"], "prices": [1]}},
        {"id": 2, "kind": "tool", "name": "add", "input": {"a": "<result_of_1>", "b": 1}},
        {"id": 3, "kind": "final", "name": "report", "dependsOn": [2]},
    ]})
    with pytest.raises(AtomExecutionError) as info:
        execute_plan(p, TOOLS, DECISIONS)
    assert info.value.cause.startswith("a: ") and info.value.record.atoms[2].attempts == 0


def test_aot_exec_045_sync_and_async_layers_run_the_same_atoms_when_one_fails():
    """A layer always finishes, sync or async: an atom's failure does not keep its independent neighbours from
    running, so the same atoms run (and are compensated) whichever way the bot is called."""
    p = valid({"atoms": [
        {"id": 1, "kind": "tool", "name": "divide", "input": {"a": 1, "b": 0}},
        {"id": 2, "kind": "tool", "name": "add", "input": {"a": 2, "b": 3}},
        {"id": 3, "kind": "final", "name": "report", "dependsOn": [1, 2]},
    ]})
    outcomes = []
    for run in (lambda: execute_plan(p, TOOLS), lambda: asyncio.run(aexecute_plan(p, TOOLS))):
        with pytest.raises(AtomExecutionError) as info:
            run()
        record = info.value.record
        outcomes.append({i: (a.status, a.result) for i, a in record.atoms.items()})
        assert record.failed_atom == 1 and record.atoms[2].status == "ok" and record.atoms[2].result == 5.0
    assert outcomes[0] == outcomes[1]

"""Recoverable atom failures (AOT-REPLAN-*) and compensation of a cancelled graph run (AOT-RUN-070), on the
scripted model: a failed execution is shown to the planner, which writes a new plan (bounded); a cancelled
async run undoes the atoms it completed."""

from __future__ import annotations

import asyncio
import json

import pytest

from llamabot import tool
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.reasoning.aot import AoTBot, AtomExecutionError
from llamabot.reasoning.aot.prompts import EXAMPLE_PLAN

DIVIDE_BY_ZERO = {
    "atoms": [
        {"id": 1, "kind": "tool", "name": "divide", "input": {"a": 1, "b": 0}, "dependsOn": []},
        {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]},
    ]
}


@pytest.mark.parametrize("path", ["sync", "async"])
def test_aot_replan_010_a_failed_execution_is_shown_to_the_planner_which_plans_again(path):
    model = ScriptedModel([json_reply(DIVIDE_BY_ZERO), json_reply(EXAMPLE_PLAN)])
    bot = AoTBot(expressions=False, model=model)
    result = (
        bot("What is (15 + 7) * 3 - 10?")
        if path == "sync"
        else asyncio.run(bot.arun("What is (15 + 7) * 3 - 10?"))
    )
    assert result.answer == 56 and result.replans == 0
    assert result.execution_failures == [
        "atom 1 (tool 'divide') failed with inputs {'a': 1, 'b': 0}: ZeroDivisionError: cannot divide by zero"
    ]
    second = model.requests[1].messages
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert (
        json.loads(second[2]["content"])["atoms"][0] == DIVIDE_BY_ZERO["atoms"][0]
    )  # the planner sees its plan...
    assert second[3]["content"].startswith(
        "Running that plan failed: atom 1 (tool 'divide') failed with inputs"
    )
    assert "cannot divide by zero" in second[3]["content"]  # ...and why it failed
    plans = result.trace.of_kind("decision")
    assert [p.attributes["iteration"] for p in plans] == [1, 2]
    assert (
        json.loads(json.dumps(result.to_dict(), default=str))["execution_failures"]
        == result.execution_failures
    )


def test_aot_replan_020_re_plans_are_bounded_and_the_last_error_names_the_atom_and_every_failure():
    model = ScriptedModel([json_reply(DIVIDE_BY_ZERO)] * 3)
    with pytest.raises(AtomExecutionError) as info:
        AoTBot(expressions=False, model=model, max_execution_replans=2)("1/0")
    error = info.value
    assert len(model.requests) == 3  # the first plan and two re-plans, no more
    assert error.atom.id == 1 and error.record.failed_atom == 1 and len(error.earlier) == 2
    message = str(error)
    assert message.startswith("atom 1 (tool 'divide') failed with inputs {'a': 1, 'b': 0}: ZeroDivisionError")
    assert "(plan 3; the earlier plans failed too: atom 1 (tool 'divide')" in message
    with pytest.raises(ValueError, match="max_execution_replans must be at least 0"):
        AoTBot(expressions=False, model=ScriptedModel(), max_execution_replans=-1)


def test_aot_replan_030_completed_atoms_are_compensated_before_the_new_plan_runs():
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
        """Pay; fails above 100."""
        if amount > 100:
            raise RuntimeError("card declined")
        log.append(f"pay {amount:g}")
        return "paid"

    def plan(amount: int) -> dict:
        return {
            "atoms": [
                {"id": 1, "kind": "tool", "name": "book", "input": {"item": "hotel"}, "dependsOn": []},
                {"id": 2, "kind": "tool", "name": "pay", "input": {"amount": amount}, "dependsOn": [1]},
                {"id": 3, "kind": "final", "name": "report", "dependsOn": [2]},
            ]
        }

    model = ScriptedModel([json_reply(plan(500)), json_reply(plan(50))])
    result = AoTBot([book, pay], model=model, compensations={"book": cancel})("book and pay")
    assert log == ["book hotel", "cancel booking-hotel", "book hotel", "pay 50"]
    assert result.answer == "paid" and "card declined" in result.execution_failures[0]
    assert "card declined" in model.requests[1].last_user_text


async def test_aot_run_070_a_cancelled_graph_run_compensates_the_atoms_it_completed():
    undone: list[str] = []
    waiting = asyncio.Event()

    @tool
    async def book(name: str) -> str:
        """Book something."""
        return f"booked {name}"

    @tool
    async def wait(name: str) -> str:
        """Take a long time."""
        waiting.set()
        await asyncio.sleep(10)
        return name

    @tool
    def cancel_booking(name: str) -> str:
        """Undo a booking."""
        undone.append(name)
        return "cancelled"

    plan = {
        "atoms": [
            {"id": 1, "kind": "tool", "name": "book", "input": {"name": "hotel"}},
            {"id": 2, "kind": "tool", "name": "book", "input": {"name": "car"}, "dependsOn": [1]},
            {"id": 3, "kind": "tool", "name": "wait", "input": {"name": "x"}, "dependsOn": [1]},
            {"id": 4, "kind": "final", "name": "report", "dependsOn": [2, 3]},
        ]
    }
    bot = AoTBot([book, wait], model=ScriptedModel([json_reply(plan)]), compensations={"book": cancel_booking})
    task = asyncio.ensure_future(bot.arun("book"))
    await asyncio.wait_for(waiting.wait(), 5)  # layer 1 done; in layer 2 atom 2 done, atom 3 waiting
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    record = info.value.record
    assert undone == [
        "car",
        "hotel",
    ]  # both completed bookings undone, newest first (the interrupted layer's too)
    assert record.status == "failed" and record.error == "cancelled"
    assert [record.atoms[i].status for i in (1, 2, 3)] == ["compensated", "compensated", "not_run"]
    assert [s.name for s in bot.last_trace.of_kind("compensation")] == [
        "2:cancel_booking",
        "1:cancel_booking",
    ]
    assert bot.last_trace.of_kind("layer")[-1].error.startswith("CancelledError")


def test_aot_replan_010_the_harness_counts_execution_replans_and_keeps_the_first_plan_valid():
    from llamabot.evals.aot import Problem, evaluate

    model = ScriptedModel([json_reply(DIVIDE_BY_ZERO), json_reply(EXAMPLE_PLAN)])
    summary = evaluate([Problem("p1", "What is (15 + 7) * 3 - 10?", 56.0)], model, methods=("aot",), aot_options={"expressions": False})["aot"]
    attempt = summary.attempts[0]
    assert attempt.correct and attempt.execution_replans == 1 and attempt.replans == 0
    assert (
        attempt.plan_valid_first is True
        and summary.execution_replans == 1
        and summary.plan_validity_rate == 1.0
    )

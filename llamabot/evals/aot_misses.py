"""Where AoT's plans go wrong: each miss of ``llamabot eval aot`` in one class. Pure.

A miss is put in the first class that fits, comparing the numbers the plan writes literally with the numbers of the
problem's gold equation (MultiArith's ``lEquations``, SVAMP's ``Equation``, an ``arith`` expression), as multisets:

- ``no_answer``: no valid plan ran to an answer (the attempt's error);
- ``sign``: the answer is the gold negated (a subtraction with its operands reversed);
- ``literal``: the plan writes a number that is not in the question (computed in the head, or a constant);
- ``distractor``: every gold number is used, plus a number of the question the gold equation does not use;
- ``missing``: a gold number is not used, and nothing else is;
- ``wrong_quantity``: a gold number is not used and another number of the question is;
- ``operation``: exactly the gold numbers, combined wrongly (operation, order or grouping).

An attempt without its plan (reports written before plans were recorded) classifies only as ``no_answer`` or
``sign``, else ``unknown``. The classes are heuristics over numbers, for finding where plans go wrong, not scores.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from llamabot.reasoning.aot.literals import input_numbers, numbers

CLASSES = ("no_answer", "sign", "literal", "distractor", "missing", "wrong_quantity", "operation", "unknown")


def plan_numbers(plan: dict[str, Any]) -> Counter[float | str]:
    """The numbers a plan writes literally in its atoms' inputs (its reasoning and sub-questions are words)."""
    return input_numbers([a.get("input", {}) for a in plan.get("atoms", [])])


def classify(attempt: dict[str, Any], question: str, equation: str) -> str:
    """The class of one missed attempt (a report's attempt dict) on a problem with this question and gold
    equation."""
    predicted, gold = attempt.get("predicted"), attempt.get("gold")
    if predicted is None:
        return "no_answer"
    if gold and abs(predicted + gold) <= 1e-6 * max(1.0, abs(gold)):
        return "sign"
    plan = attempt.get("plan")
    if not plan:
        return "unknown"
    used, wanted, given = plan_numbers(plan), numbers(equation), numbers(question)
    if used - given:
        return "literal"
    extra, missing = used - wanted, wanted - used
    if missing and extra:
        return "wrong_quantity"
    if missing:
        return "missing"
    if extra:
        return "distractor"
    return "operation"


def miss_classes(attempts: Iterable[Any], problems: Iterable[Any]) -> dict[str, int]:
    """How many missed attempts fall in each class (in :data:`CLASSES` order, empty classes left out).
    ``attempts``: ``Attempt`` records of :mod:`llamabot.evals.aot` or a report's attempt dicts; ``problems``: the
    ``Problem`` s they ran on, whose ``equation`` is the gold one (a problem without one classes its misses as a
    plan-less attempt's: ``no_answer``, ``sign`` or ``unknown``)."""
    by_id = {p.id: p for p in problems}
    counts: Counter[str] = Counter()
    for attempt in attempts:
        record = attempt if isinstance(attempt, dict) else asdict(attempt)
        if not record["correct"]:
            problem = by_id[record["problem"]]
            if not problem.equation:
                record = {**record, "plan": None}
            counts[classify(record, problem.question, problem.equation or "")] += 1
    return {c: counts[c] for c in CLASSES if counts[c]}

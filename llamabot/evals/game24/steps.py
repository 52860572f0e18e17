"""Game of 24 steps: reading ``a op b = c`` steps, the numbers they leave, and the expression they build. Pure.

A step is what a model writes: ``4 + 9 = 13`` (optionally followed by ``(left: ...)``, which is ignored). The
game keeps the state itself: the numbers left are the puzzle's, minus each step's two operands, plus the
result the step *claims* (so a wrong claim stays wrong and the final check fails). An expression is composed
from a full path of steps by substitution; it is then judged by :func:`check_game24`, never evaluated here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from llamabot.evals.game24.check import _APPLY, check_game24, parse_puzzle

# A number is a whole run of digits: (?![0-9]) stops a number from giving digits back, and the step only starts
# where a number starts ((?<![0-9.]) for ``a``), so a long run of digits is read once, not once per position
# (the old pattern was quadratic: ``"1" * 6000 + "x"`` took seconds).
_NUMBER = r"-?[0-9]+(?![0-9])(?:\.[0-9]+(?![0-9]))?(?:/[0-9]+(?![0-9]))?"
_STEP = re.compile(
    rf"(?<![0-9.])(?P<a>{_NUMBER})\s*(?P<op>[-+*/×÷−xX])\s*(?P<b>{_NUMBER})\s*=\s*(?P<c>{_NUMBER})"
)
_OPS = {"×": "*", "x": "*", "X": "*", "÷": "/", "−": "-"}
_ANSWER = re.compile(r"answer\s*[:：]\s*(.+)", re.I)


@dataclass(frozen=True, slots=True)
class Step:
    """One parsed step: ``a op b = result`` (``op`` is one of ``+ - * /``)."""

    a: Fraction
    op: str
    b: Fraction
    result: Fraction


def parse_step(text: str) -> Step | None:
    """The first ``a op b = c`` in ``text``, or ``None`` when there is none (also for numbers past Python's
    integer-digit limit). Linear in the length of ``text``."""
    for match in _STEP.finditer(text or ""):
        try:
            a, b, c = (Fraction(match.group(k)) for k in ("a", "b", "c"))
        except (ValueError, ZeroDivisionError):
            continue
        return Step(a, _OPS.get(match.group("op"), match.group("op")), b, c)
    return None


def format_number(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def format_numbers(values: Sequence[Fraction | int]) -> str:
    return " ".join(format_number(Fraction(v)) for v in values)


def _take(pool: list, value: Fraction) -> object | None:
    for index, item in enumerate(pool):
        if (item[0] if isinstance(item, tuple) else item) == value:
            return pool.pop(index)
    return None


def numbers_left(puzzle: str, steps: Sequence[str]) -> tuple[Fraction, ...] | None:
    """The numbers left after ``steps``; ``None`` when a step is unreadable or uses a number that is not left."""
    pool: list = [Fraction(n) for n in parse_puzzle(puzzle)]
    for text in steps:
        step = parse_step(text)
        if step is None or _take(pool, step.a) is None or _take(pool, step.b) is None:
            return None
        pool.append(step.result)
    return tuple(pool)


def step_violation(puzzle: str, path: Sequence[str], text: str) -> str | None:
    """The rule of the game that step ``text``, taken after ``path``, breaks, or ``None``: it must read as
    ``a op b = c``, take two numbers that are left, and ``c`` must be exactly ``a op b``. Rules only: whether the
    step can still reach 24 is never judged here."""
    left = numbers_left(puzzle, path)
    if left is None:
        return f"{text}: the steps before it are not valid"
    step = parse_step(text)
    if step is None:
        return f"{text!r} is not a step 'a op b = c'"
    pool = list(left)
    if _take(pool, step.a) is None or _take(pool, step.b) is None:
        return f"{text}: uses a number that is not left ({format_numbers(left)})"
    a, op, b = format_number(step.a), step.op, format_number(step.b)
    if op == "/" and step.b == 0:
        return f"{text}: division by zero"
    value = _APPLY[op](step.a, step.b)
    if value != step.result:
        return f"{text}: {a} {op} {b} is {format_number(value)}, not {format_number(step.result)}"
    return None


def _unwrap(expression: str) -> str:
    """Drop one pair of parentheses that encloses the whole expression."""
    if not (expression.startswith("(") and expression.endswith(")")):
        return expression
    depth = 0
    for index, char in enumerate(expression):
        depth += char == "("
        depth -= char == ")"
        if depth == 0 and index < len(expression) - 1:
            return expression
    return expression[1:-1]


def expression_from_steps(puzzle: str, steps: Sequence[str]) -> str | None:
    """The expression a full path of steps builds (``(13 - 9) * (10 - 4)``), or ``None`` when the steps are
    unreadable, use numbers that are not left, or do not end with exactly one number."""
    return _compose(parse_puzzle(puzzle), [parse_step(text) for text in steps], 0)


def _compose(numbers: tuple[int, ...], steps: Sequence[Step | None], start: int) -> str | None:
    """:func:`expression_from_steps` over already parsed steps, from ``steps[start]`` on (no copy). Stops at
    the first step that cannot apply, so it reads at most ``len(numbers)`` steps."""
    pool: list = [(Fraction(n), str(n)) for n in numbers]
    for index in range(start, len(steps)):
        step = steps[index]
        if step is None:
            return None
        left, right = _take(pool, step.a), _take(pool, step.b)
        if left is None or right is None:
            return None
        pool.append((step.result, f"({left[1]} {step.op} {right[1]})"))
    return _unwrap(pool[0][1]) if len(pool) == 1 else None


def is_solution_path(puzzle: str, steps: Sequence[str]) -> bool:
    """The goal test of the game: the steps compose an expression that checks (see :func:`check_game24`)."""
    expression = expression_from_steps(puzzle, steps)
    return expression is not None and check_game24(puzzle, expression)


def extract_answer(text: str | None, puzzle: str) -> str | None:
    """The expression a free-form reply proposes: its last ``Answer: ...`` line (``= 24`` kept, the checker
    accepts it), else the expression composed from the reply's step lines, else ``None``."""
    if not text:
        return None
    answers = [m.group(1).strip().strip("`$*. ") for m in map(_ANSWER.search, text.splitlines()) if m]
    answers = [a for a in answers if a]
    if answers:
        return answers[-1]
    numbers = parse_puzzle(puzzle)
    steps = [step for step in map(parse_step, text.splitlines()) if step is not None]
    # Each step takes two numbers and gives one, so only the last len(numbers) - 1 steps can build the
    # expression: one composition, not one per starting line (which made long replies slow).
    start = len(steps) - (len(numbers) - 1)
    return _compose(numbers, steps, start) if 0 <= start < len(steps) else None

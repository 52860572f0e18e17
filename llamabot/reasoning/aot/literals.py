"""The numbers an arithmetic plan may write: AoT's model never computes, so a number in an atom's input is one of
the question's (or a conventional constant: a small count, a dozen, a hundred), never one worked out in its head.
Pure and linear in the text.

    allowed = question_numbers("Tom had 3 apples and bought 49 more.")
    computed_literals(plan, allowed)   # [(2, "52 is not a number of the question: ...")]
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from llamabot.reasoning.aot.plan import Plan

#: A number as written (no sign: "-3" is the number 3 subtracted), not part of a word or of another number.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
#: Thousands separators of a question's numbers ("1,250" is 1250).
_SEPARATOR = re.compile(r"(?<=\d),(?=\d\d\d(?!\d))")
_REFERENCE = re.compile(r"<result_of_\d+>")
#: Longer numbers are compared as text: converting them costs more than they can be worth here.
_MAX_DIGITS = 40
#: Constants a plan may write without the question naming them: small counts (twice, half, a week), a dozen, an
#: hour's minutes, a day's hours, percent and thousands.
CONSTANTS: frozenset[float | str] = frozenset({*map(float, range(13)), 24.0, 60.0, 100.0, 1000.0})


def _value(text: str) -> float | str:
    return float(text) if len(text) <= _MAX_DIGITS else text


def numbers(text: str) -> Counter[float | str]:
    """The numbers written in ``text`` (a question, an expression, an equation), as a multiset; atom references
    (``<result_of_3>``) are not numbers, and ``1,250`` is one number."""
    plain = _SEPARATOR.sub("", _REFERENCE.sub(" ", text))
    return Counter(_value(n) for n in _NUMBER.findall(plain))


def input_numbers(value: Any) -> Counter[float | str]:
    """The numbers an atom's input writes literally: JSON numbers, and numbers inside strings (expressions)."""
    found: Counter[float | str] = Counter()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, bool):
            continue
        elif isinstance(item, (int, float)):
            found[float(abs(item))] += 1
        elif isinstance(item, str):
            found += numbers(item)
    return found


def question_numbers(question: str) -> frozenset[float | str]:
    """What a plan for ``question`` may write literally: the question's numbers and :data:`CONSTANTS`."""
    return CONSTANTS | frozenset(numbers(question))


def computed_literals(plan: Plan, allowed: frozenset[float | str]) -> list[tuple[int, str]]:
    """``(atom id, message)`` for each atom that writes a number outside ``allowed`` (naming the first)."""
    issues = []
    for atom in plan.atoms:
        if atom.kind == "final":
            continue
        outside = [n for n in input_numbers(atom.input) if n not in allowed]
        if outside:
            shown = f"{outside[0]:g}" if isinstance(outside[0], float) else outside[0][:20] + "..."
            issues.append((atom.id, f"{shown} is not a number of the question: never compute in your head; write how "
                                    "it follows from the question's numbers (in the expression, or with <result_of_N>)"))
    return issues

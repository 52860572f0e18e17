"""CHECK steps: LWT steps the program evaluates over the items, with no model call. Pure.

``(c1)=CHECK('{(items)}[*][attributes][GoodForKids] == True')`` outputs the numbers of the items whose value at
the path satisfies the comparison, as ``[1, 4, 7]`` (or ``[]``): the form a model step's answer ends with, so the
ranking and later steps read both kinds alike. On the 20 dev requests the embedded 1.5B model answered 49 of 69
such value lookups wrongly as ``LLM`` steps (``1=True, 2=missing, ...``: which are True?), mostly by listing
every item; a comparison is the program's job.

The expression is ``<item variable with a [*] path> <op> <value>``; ``op`` is one of ``==`` (also ``=``),
``!=``, ``<``, ``<=``, ``>``, ``>=``. What satisfies it:

- a value an item lacks (``missing``) or ``None`` never does, whatever the op;
- ``True``/``False`` (also ``yes``/``no``) compares truthiness: a bool as it is, a number when not 0, a text
  unless it is ``no``, ``none``, ``false``, ``0``, ``null`` or empty (``WiFi == False`` holds for ``no``), a dict
  when one of its values is truthy (``BusinessParking == True``), a list when it is not empty;
- a number compares numerically with a number (or a numeric text); ``<``, ``<=``, ``>``, ``>=`` need a number
  (``[reviews][~cozy] >= 1``: at least one review mentions cozy);
- any other text compares case-insensitively with the value's text; a dict value holds it when its key of that
  name is truthy (``BusinessParking == street``), a list when one element equals it.

Nothing is evaluated as code: the expression is split by one regular expression and compared as data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llamabot.errors import LlamabotError
from llamabot.reasoning.anot.paths import ALL_ITEMS, MISSING, DataPathError, parse_path, render_value, walk

OPERATORS = ("==", "!=", "<=", ">=", "<", ">")
_EXPRESSION = re.compile(
    r"^\s*(?P<path>\{\((?:items|context|input)\)\}(?:\[[^\[\]\n]*\])+)\s*(?P<op>==|!=|<=|>=|=|<|>)\s*(?P<value>.*?)\s*$"
)
_TRUE_WORDS = frozenset({"true", "yes"})
_FALSE_WORDS = frozenset({"false", "no"})
_FALSY_TEXT = frozenset({"", "no", "none", "false", "0", "null"})
EXAMPLE = "(c1)=CHECK('{(items)}[*][attributes][GoodForKids] == True')"


class CheckError(LlamabotError, ValueError):
    """A CHECK expression that cannot be evaluated; the message says what is wrong and shows the form."""


@dataclass(frozen=True, slots=True)
class Check:
    """A parsed CHECK: the path below ``[*]``, the operator and the value compared with (as written)."""

    segments: tuple[str, ...]
    op: str
    value: str

    @property
    def expected(self) -> bool | float | str:
        """The value as compared: a bool, a number or a lower-case text."""
        return _expected(self.value)


def _number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number else None  # NaN compares with nothing


def _expected(value: str) -> bool | float | str:
    word = value.lower()
    if word in _TRUE_WORDS or word in _FALSE_WORDS:
        return word in _TRUE_WORDS
    number = _number(value)
    return number if number is not None else word


def parse_check(expression: str) -> Check:
    """Parse ``{(items)}[*][path] op value``. Raises :class:`CheckError` naming what is wrong."""
    match = _EXPRESSION.match(expression)
    if match is None:
        raise CheckError(
            f"a CHECK compares every item's value with one value, as path op value with op one of "
            f"{', '.join(OPERATORS)}; got {expression[:120]!r}. Example: {EXAMPLE}"
        )
    try:
        segments = parse_path(match.group("path"))
    except DataPathError as exc:
        raise CheckError(f"{match.group('path')}: {exc.reason}") from exc
    if segments[0] != ALL_ITEMS or len(segments) < 2:
        raise CheckError(f"a CHECK compares every item: its path starts with [*] and names a field, got {match.group('path')}")
    value = match.group("value").strip().strip("'\"").strip()
    if not value:
        raise CheckError(f"nothing to compare with after {match.group('op')!r}. Example: {EXAMPLE}")
    op = "==" if match.group("op") == "=" else match.group("op")
    check = Check(segments[1:], op, value)
    if op not in ("==", "!=") and not isinstance(check.expected, float):
        raise CheckError(f"{op} compares numbers; {value!r} is not a number")
    return check


def truthy(value: Any) -> bool:
    """Truthiness of a data value (see the module docstring)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, str):
        return value.strip().lower() not in _FALSY_TEXT
    if isinstance(value, dict):
        return any(truthy(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return bool(value)
    return value is not None and value is not MISSING


def _numeric(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return _number(value.strip()) if isinstance(value, str) else None


def _equals(value: Any, expected: bool | float | str) -> bool:
    if isinstance(expected, bool):
        return truthy(value) == expected
    if isinstance(expected, float):
        number = _numeric(value)
        if number is not None:
            return number == expected
        word = format(expected, "g")
    else:
        word = expected
    if isinstance(value, dict):
        return any(str(key).lower() == word and truthy(v) for key, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(render_value(element).strip().lower() == word for element in value)
    return render_value(value).strip().lower() == word


def satisfies(value: Any, check: Check) -> bool:
    """Whether one item's ``value`` satisfies ``check``."""
    if value is MISSING or value is None:
        return False
    expected = check.expected
    if check.op == "==":
        return _equals(value, expected)
    if check.op == "!=":
        return not _equals(value, expected)
    number = _numeric(value)
    if number is None or not isinstance(expected, float):
        return False
    return {"<": number < expected, "<=": number <= expected, ">": number > expected, ">=": number >= expected}[check.op]


def matching_items(check: Check, items: Sequence[Any]) -> list[int]:
    """The 1-based numbers of the items that satisfy ``check``. Raises :class:`CheckError` for a path that
    cannot be walked (e.g. a word where a list needs an index)."""
    try:
        return [number for number, item in enumerate(items, start=1) if satisfies(walk(item, check.segments), check)]
    except DataPathError as exc:
        raise CheckError(exc.reason) from exc


def check_output(check: Check, items: Sequence[Any]) -> str:
    """The step's output: ``[1, 4, 7]`` or ``[]``."""
    return "[" + ", ".join(map(str, matching_items(check, items))) + "]"

"""The LOGIC of a strategy: ``AND(1, 2, OR(3, 4))`` over condition ids, nestable. Pure.

``parse_logic`` reads the text form the model writes; ``Logic.render`` writes it back in canonical form;
``logic_scores`` grades every item by how well it satisfies the logic, given which items satisfy each condition
(``AND`` = the mean of its parts, ``OR`` = the best of them, a condition = 1 or 0), which ranks partial matches
(the seed's "if no perfect match, rank by condition count").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal, Union

from llamabot.errors import LlamabotError, excerpt

Operator = Literal["AND", "OR"]
Term = Union[int, "Logic"]

_TOKEN = re.compile(r"\s*(?:(?P<op>AND|OR)\b|(?P<num>\d+)|(?P<punct>[(),]))", re.IGNORECASE)
#: How deeply AND/OR may nest, and the most digits of a condition id (the parser recurses per level, and
#: Python refuses integers past 4,300 digits: both are syntax errors here, never a crash).
MAX_NESTING = 32
MAX_ID_DIGITS = 9


class LogicSyntaxError(LlamabotError, ValueError):
    """The LOGIC text is not ``AND(...)``/``OR(...)`` over condition ids. ``position`` is 0-based."""

    def __init__(self, text: str, position: int, reason: str):
        self.text = text
        self.position = position
        super().__init__(f"LOGIC {excerpt(text)} at position {position}: {reason}; write e.g. AND(1, 2, OR(3, 4))")


@dataclass(frozen=True, slots=True)
class Logic:
    """An AND/OR node over condition ids (ints) and nested nodes."""

    op: Operator
    args: tuple[Term, ...]

    def render(self) -> str:
        return f"{self.op}(" + ", ".join(str(a) if isinstance(a, int) else a.render() for a in self.args) + ")"

    def condition_ids(self) -> set[int]:
        ids: set[int] = set()
        for arg in self.args:
            ids |= {arg} if isinstance(arg, int) else arg.condition_ids()
        return ids


def parse_logic(text: str) -> Logic:
    """Parse ``AND(1, 2, OR(3, 4))``. A bare id (``"1"``) is ``AND(1)``. Raises :class:`LogicSyntaxError`, and
    nothing else, whatever the text (nesting past :data:`MAX_NESTING`, ids past :data:`MAX_ID_DIGITS` digits)."""
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    stripped = text.rstrip()
    while pos < len(stripped):
        match = _TOKEN.match(stripped, pos)
        if match is None:
            raise LogicSyntaxError(text, pos, f"unexpected {stripped[pos:pos + 10]!r}")
        kind = match.lastgroup or ""
        if kind == "num" and len(match.group(kind)) > MAX_ID_DIGITS:
            raise LogicSyntaxError(text, match.start(kind), f"a condition id has at most {MAX_ID_DIGITS} digits")
        tokens.append((kind, match.group(kind).upper(), match.start(kind)))
        pos = match.end()
    if not tokens:
        raise LogicSyntaxError(text, 0, "it is empty")
    if len(tokens) == 1 and tokens[0][0] == "num":
        return Logic("AND", (int(tokens[0][1]),))
    node, index = _parse_node(text, tokens, 0, 0)
    if index != len(tokens):
        raise LogicSyntaxError(text, tokens[index][2], "unexpected text after the expression")
    return node


def _parse_node(text: str, tokens: list[tuple[str, str, int]], index: int, depth: int) -> tuple[Logic, int]:
    kind, value, position = tokens[index]
    if kind != "op":
        raise LogicSyntaxError(text, position, f"expected AND or OR, got {value!r}")
    if depth >= MAX_NESTING:
        raise LogicSyntaxError(text, position, f"AND/OR nest more than {MAX_NESTING} levels deep")
    if index + 1 >= len(tokens) or tokens[index + 1][1] != "(":
        raise LogicSyntaxError(text, position, f"{value} must be followed by '('")
    index += 2
    args: list[Term] = []
    while True:
        if index >= len(tokens):
            raise LogicSyntaxError(text, len(text), "missing ')'")
        kind, token, position = tokens[index]
        if kind == "num":
            args.append(int(token))
            index += 1
        elif kind == "op":
            child, index = _parse_node(text, tokens, index, depth + 1)
            args.append(child)
        else:
            raise LogicSyntaxError(text, position, f"expected a condition id or AND/OR, got {token!r}")
        if index >= len(tokens):
            raise LogicSyntaxError(text, len(text), "missing ')'")
        separator = tokens[index][1]
        index += 1
        if separator == ")":
            return Logic(value, tuple(args)), index  # type: ignore[arg-type]
        if separator != ",":
            raise LogicSyntaxError(text, tokens[index - 1][2], f"expected ',' or ')', got {separator!r}")


def _score(term: Term, item: int, satisfied: Mapping[int, Collection[int]]) -> float:
    if isinstance(term, int):
        return 1.0 if item in satisfied.get(term, ()) else 0.0
    parts = [_score(arg, item, satisfied) for arg in term.args]
    return sum(parts) / len(parts) if term.op == "AND" else max(parts)


def logic_scores(logic: Logic, satisfied: Mapping[int, Collection[int]], n_items: int) -> dict[int, float]:
    """Item number (1-indexed) -> score in [0, 1]: 1 when the logic holds, partial credit for AND parts."""
    return {item: _score(logic, item, satisfied) for item in range(1, n_items + 1)}

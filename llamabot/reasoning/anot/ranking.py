"""Read item numbers out of model text, and turn the final step's output into a ranking. Pure.

``parse_ranking(text, n_items, scores)`` tries, in order (the first that yields a valid item number wins):

1. ``list``: the **last** bracketed list of integers, e.g. ``... so the answer is [5, 1, 2]``;
2. ``integers``: the integers on the last line of the text that has any valid item number;
3. ``scores``: the items ranked by ``scores`` (the condition outputs graded by the strategy's logic, or
   votes: how many condition steps listed each item), best first, ties by item number;
4. ``order``: item order 1..N (nothing usable at all).

Item numbers are 1-indexed; numbers outside 1..N and repeats are dropped. The ranking is then completed to
every item: the items the model did not name follow, ordered by ``scores`` (else by number).

Total and linear in the text's length, whatever the text: bracketed lists are found by a pattern that cannot
backtrack (no brackets inside one), and a number with more digits than any item number is simply not one
(Python refuses to convert integers past 4,300 digits).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

RankingSource = Literal["list", "integers", "scores", "order"]
#: How ANoT ranks: by the strategy's logic over the condition steps (default), or by the final step's output.
RANK_BY = ("scores", "final")

_BRACKETED = re.compile(r"\[([^\[\]]*)\]")
_DIGITS = re.compile(r"\d+")
_INT = re.compile(r"(?<![\w.])\d+(?![\w.])")


@dataclass(frozen=True, slots=True)
class Ranking:
    """Every item number (1-indexed), best first. ``parsed``: what the model's text gave; ``source``: which
    rule produced it (see the module docstring)."""

    indices: tuple[int, ...]
    source: RankingSource
    parsed: tuple[int, ...] = ()

    @property
    def best(self) -> int | None:
        return self.indices[0] if self.indices else None

    def top(self, k: int) -> tuple[int, ...]:
        return self.indices[:k]

    def record(self) -> dict[str, Any]:
        """The ranking's fields of a JSON-ready run record: ``ranking``, ``ranking_source``, ``parsed``."""
        return {"ranking": list(self.indices), "ranking_source": self.source, "parsed": list(self.parsed)}


def _valid(numbers: list[str], n_items: int) -> list[int]:
    """The item numbers among the digit strings ``numbers``, in order, without repeats."""
    width = len(str(n_items))
    seen: dict[int, None] = {}
    for digits in numbers:
        significant = digits.lstrip("0")
        if len(significant) <= width and 1 <= (number := int(significant or "0")) <= n_items:
            seen.setdefault(number, None)
    return list(seen)


def _integer_list(body: str) -> list[str] | None:
    """The digit strings of a list body ``1, 2,3`` (a trailing comma allowed, blank: empty), else ``None``."""
    if not body.strip():
        return []
    parts = [part.strip() for part in body.split(",")]
    if len(parts) > 1 and not parts[-1]:
        parts.pop()
    if parts == [""]:  # "[,]"
        return []
    return parts if all(_DIGITS.fullmatch(part) for part in parts) else None


def parse_index_list(text: str | None, n_items: int) -> list[int] | None:
    """The last bracketed list of integers in ``text``, restricted to valid item numbers (may be empty:
    ``[]`` means "none"). ``None`` when the text has no such list."""
    last = None
    for match in _BRACKETED.finditer(text or ""):
        numbers = _integer_list(match.group(1))
        if numbers is not None:
            last = numbers
    return None if last is None else _valid(last, n_items)


def _last_line_integers(text: str, n_items: int) -> list[int]:
    for line in reversed(text.splitlines()):
        found = _valid(_INT.findall(line), n_items)
        if found:
            return found
    return []


def ranked_by_scores(scores: Mapping[int, float], n_items: int) -> list[int]:
    """Item numbers best first by score (missing scores count 0), ties by item number."""
    return sorted(range(1, n_items + 1), key=lambda item: (-scores.get(item, 0.0), item))


def parse_ranking(text: str | None, n_items: int, scores: Mapping[int, float] | None = None) -> Ranking:
    """The final step's output as a complete ranking of ``n_items`` items (rules in the module docstring)."""
    text = text or ""
    listed = parse_index_list(text, n_items)
    parsed: list[int]
    source: RankingSource
    if listed:
        parsed, source = listed, "list"
    elif found := _last_line_integers(text, n_items):
        parsed, source = found, "integers"
    elif scores and any(scores.values()):
        parsed, source = [], "scores"
    else:
        parsed, source = [], "order"
    rest_order = ranked_by_scores(scores or {}, n_items)
    chosen = set(parsed)
    return Ranking(tuple(parsed + [i for i in rest_order if i not in chosen]), source, tuple(parsed))


#: How a step that could not run reports it in its output (``ERROR: <why>``): such an output lists no item.
ERROR_PREFIX = "ERROR: "


def step_items(output: str | None, n_items: int) -> list[int]:
    """The items a condition step's output lists (its last list); none for a step that failed, whose error text
    may quote a path such as ``[1]``."""
    if output is None or output.startswith(ERROR_PREFIX):
        return []
    return parse_index_list(output, n_items) or []


def condition_votes(outputs: Mapping[str, str], final_id: str, n_items: int) -> dict[int, float]:
    """How many condition steps (every step but the final) list each item, reading each output's last list."""
    votes = {item: 0.0 for item in range(1, n_items + 1)}
    for step_id, output in outputs.items():
        if step_id == final_id:
            continue
        for item in step_items(output, n_items):
            votes[item] += 1.0
    return votes

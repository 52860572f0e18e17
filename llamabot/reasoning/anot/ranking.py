"""Read item numbers out of model text, and turn the final step's output into a ranking. Pure.

``parse_ranking(text, n_items, scores)`` tries, in order (the first that yields a valid item number wins):

1. ``list``: the **last** bracketed list of integers, e.g. ``... so the answer is [5, 1, 2]``;
2. ``integers``: the integers on the last line of the text that has any valid item number;
3. ``scores``: the items ranked by ``scores`` (the condition outputs graded by the strategy's logic, or
   votes: how many condition steps listed each item), best first, ties by item number;
4. ``order``: item order 1..N (nothing usable at all).

Item numbers are 1-indexed; numbers outside 1..N and repeats are dropped. The ranking is then completed to
every item: the items the model did not name follow, ordered by ``scores`` (else by number).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

RankingSource = Literal["list", "integers", "scores", "order"]
#: How ANoT ranks: by the strategy's logic over the condition steps (default), or by the final step's output.
RANK_BY = ("scores", "final")

_INT_LIST = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)?\s*,?\s*\]")
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


def _valid(numbers: list[int], n_items: int) -> list[int]:
    seen: dict[int, None] = {}
    for number in numbers:
        if 1 <= number <= n_items:
            seen.setdefault(number, None)
    return list(seen)


def parse_index_list(text: str | None, n_items: int) -> list[int] | None:
    """The last bracketed list of integers in ``text``, restricted to valid item numbers (may be empty:
    ``[]`` means "none"). ``None`` when the text has no such list."""
    matches = _INT_LIST.findall(text or "")
    if not matches:
        return None
    body = matches[-1]
    return _valid([int(n) for n in re.findall(r"\d+", body)], n_items)


def _last_line_integers(text: str, n_items: int) -> list[int]:
    for line in reversed(text.splitlines()):
        found = _valid([int(n) for n in _INT.findall(line)], n_items)
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


def condition_votes(outputs: Mapping[str, str], final_id: str, n_items: int) -> dict[int, float]:
    """How many condition steps (every step but the final) list each item, reading each output's last list."""
    votes = {item: 0.0 for item in range(1, n_items + 1)}
    for step_id, output in outputs.items():
        if step_id == final_id:
            continue
        for item in parse_index_list(output, n_items) or ():
            votes[item] += 1.0
    return votes

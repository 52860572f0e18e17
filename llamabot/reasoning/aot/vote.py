"""Self-consistency over plans: the majority answer of several executed plans. Pure, no model.

Answers are compared by value, not by form: ``14``, ``14.0`` and ``"14"`` are one answer (a calculator returns
floats, a decision tool may return text); numbers equal to 9 significant digits are one answer (``0.1 + 0.2``
and ``0.3``); ``{3: 6.0, 4: 14.0}`` equals ``{4: 14, 3: 6}``. A tie is broken by the earliest sample: the answer
that sample 1 gave wins a tie it is in, and so on, so the vote never depends on anything but the samples' order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Numbers are compared at this many significant digits (float noise of different plans is far below it).
SIGNIFICANT_DIGITS = 9


def answer_key(answer: Any) -> Any:
    """A hashable key under which equal answers meet (see the module docstring)."""
    if isinstance(answer, bool) or answer is None:
        return ("value", answer)
    if isinstance(answer, (int, float)):
        return _number_key(float(answer))
    if isinstance(answer, str):
        text = answer.strip()
        try:
            return _number_key(float(text.replace(",", "")))
        except ValueError:
            return ("text", text.lower())
    if isinstance(answer, dict):
        return ("map", tuple(sorted((str(k), repr(answer_key(v))) for k, v in answer.items())))
    if isinstance(answer, (list, tuple)):
        return ("list", tuple(answer_key(v) for v in answer))
    return ("repr", repr(answer))


def _number_key(value: float) -> tuple[str, Any]:
    if math.isnan(value) or math.isinf(value):
        return ("number", repr(value))
    rounded = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return ("number", rounded + 0.0)  # + 0.0: -0.0 and 0.0 are one answer


@dataclass(frozen=True, slots=True)
class Vote:
    """The outcome of a vote: ``winner`` is the index (into the answers voted on) of the first sample that gave
    the winning answer; ``counts`` the votes of each distinct answer, in order of first appearance, as
    ``(index of its first sample, votes)``."""

    winner: int
    counts: tuple[tuple[int, int], ...]

    @property
    def votes(self) -> int:
        """How many samples gave the winning answer."""
        return next(n for first, n in self.counts if first == self.winner)


def majority(answers: Sequence[Any]) -> Vote:
    """The majority answer of ``answers`` (one per executed plan, in sample order); ties go to the earliest.
    Raises ``ValueError`` when there is nothing to vote on."""
    if not answers:
        raise ValueError("no answers to vote on: every sampled plan failed")
    first: dict[Any, int] = {}
    votes: dict[Any, int] = {}
    for index, answer in enumerate(answers):
        key = answer_key(answer)
        first.setdefault(key, index)
        votes[key] = votes.get(key, 0) + 1
    best = max(votes.values())
    winner = min(first[key] for key, n in votes.items() if n == best)
    return Vote(winner, tuple((first[key], votes[key]) for key in first))

"""Ranking metrics: Hits@k and MRR. Pure.

A ranking is a sequence of item ids, best first; ``gold`` is the correct id. Hits@k is 1 when the gold item is
among the first k; the reciprocal rank is 1/position of the gold item (0 when it is not ranked). Over several
requests both are averaged (MRR is the mean reciprocal rank; upstream documented it but never computed it).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

KS = (1, 2, 3, 4, 5)


def hits_at(ranking: Sequence[Hashable], gold: Hashable, k: int) -> float:
    """1.0 if ``gold`` is among the first ``k`` of ``ranking``, else 0.0."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return 1.0 if gold in ranking[:k] else 0.0


def reciprocal_rank(ranking: Sequence[Hashable], gold: Hashable) -> float:
    """1/position (1-based) of ``gold`` in ``ranking``, 0.0 when it is absent."""
    for position, item in enumerate(ranking, start=1):
        if item == gold:
            return 1.0 / position
    return 0.0


def summarize(pairs: Iterable[tuple[Sequence[Hashable], Hashable]], ks: Sequence[int] = KS) -> dict[str, float]:
    """Mean Hits@k for each k and MRR over ``(ranking, gold)`` pairs (``n``: how many); zeros when empty."""
    pairs = list(pairs)
    n = len(pairs)
    summary: dict[str, float] = {"n": float(n)}
    for k in ks:
        summary[f"hits@{k}"] = sum(hits_at(r, g, k) for r, g in pairs) / n if n else 0.0
    summary["mrr"] = sum(reciprocal_rank(r, g) for r, g in pairs) / n if n else 0.0
    return summary

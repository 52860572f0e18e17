"""ANoT's evaluation: the philly_cafes data, the CoT baseline, Hits@k and MRR, and the harness that runs either
method over a dataset's requests (``llamabot anot``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llamabot.lazy import lazy_attributes

_EXPORTS: dict[str, str] = {
    "CoTBot": "llamabot.evals.anot.cot",
    "AsyncCoTBot": "llamabot.evals.anot.cot",
    "load_dataset": "llamabot.evals.anot.data",
    "select_candidates": "llamabot.evals.anot.data",
    "evaluate": "llamabot.evals.anot.harness",
    "hits_at": "llamabot.evals.anot.metrics",
    "reciprocal_rank": "llamabot.evals.anot.metrics",
}

__all__ = ["AsyncCoTBot", "CoTBot", "evaluate", "hits_at", "load_dataset", "reciprocal_rank", "select_candidates"]

if TYPE_CHECKING:
    from llamabot.evals.anot.cot import AsyncCoTBot, CoTBot
    from llamabot.evals.anot.data import load_dataset, select_candidates
    from llamabot.evals.anot.harness import evaluate
    from llamabot.evals.anot.metrics import hits_at, reciprocal_rank

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals(), __all__)

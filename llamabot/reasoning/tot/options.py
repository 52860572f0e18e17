"""Search options of the Tree-of-Thoughts machine, with the seed's defaults, validated on construction."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import Any

from llamabot.errors import LlamabotError


class ToTError(LlamabotError, ValueError):
    """Invalid options, an unreadable saved machine, or a message the machine cannot accept."""


class Traversal(str, Enum):
    BFS = "bfs"
    DFS = "dfs"
    BEST_FIRST = "best_first"


@dataclass(frozen=True, slots=True)
class ToTOptions:
    """Search options, with the seed's defaults. ``traversal_strategy``: ``best_first``, ``bfs`` or ``dfs``;
    ``beam_width`` caps the best-first frontier; ``convergence_window`` 1 disables convergence.

    Budgets: ``max_nodes`` (tree size) and ``max_model_calls`` (every generate, evaluate and repair call; a
    search never starts an expansion it cannot finish within it) bound a search the same way on any machine;
    ``max_duration_ms`` (wall clock, off by default) depends on the machine's speed.
    ``prefer_deeper``: best-first breaks ties between equal scores in favour of the deeper node (the search goes
    down a tied branch before it opens the next); off: the older node first.
    ``parallel_expansions``: how many of the best frontier nodes one wave expands side by side (their model calls
    are sent together, so a batching model serves them at once); 1 expands one node at a time."""

    branching_factor: int = 3
    max_depth: int = 3
    traversal_strategy: Traversal = Traversal.BEST_FIRST
    top_k: int = 3
    min_depth: int = 2
    max_nodes: int = 100
    max_duration_ms: float | None = None
    max_model_calls: int | None = None
    beam_width: int | None = None
    early_success_threshold: float = 1.0
    convergence_window: int = 2
    min_score_improvement: float = 0.02
    max_parse_retries: int = 1
    prefer_deeper: bool = False
    parallel_expansions: int = 1

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "traversal_strategy", Traversal(self.traversal_strategy))
        except ValueError:
            raise ToTError(
                f"traversal_strategy must be one of {[t.value for t in Traversal]}, got {self.traversal_strategy!r}"
            ) from None
        minimums = {"branching_factor": 1, "max_depth": 1, "top_k": 1, "min_depth": 0, "max_nodes": 2,
                    "convergence_window": 1, "max_parse_retries": 0,
                    "parallel_expansions": 1}
        for name, low in minimums.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ToTError(f"{name} must be an integer >= {low}, got {value!r}")
        if self.min_depth > self.max_depth:
            raise ToTError(f"min_depth ({self.min_depth}) cannot exceed max_depth ({self.max_depth})")
        if self.beam_width is not None and (not isinstance(self.beam_width, int) or self.beam_width < 1):
            raise ToTError(f"beam_width must be None or an integer >= 1, got {self.beam_width!r}")
        calls = self.max_model_calls
        if calls is not None and (not isinstance(calls, int) or isinstance(calls, bool) or calls < 2):
            raise ToTError(f"max_model_calls must be None or an integer >= 2 (one generation and one evaluation), "
                           f"got {calls!r}")
        if self.max_duration_ms is not None and not self.max_duration_ms > 0:
            raise ToTError(f"max_duration_ms must be None or > 0, got {self.max_duration_ms!r}")
        if not self.early_success_threshold >= 0:
            raise ToTError(f"early_success_threshold must be >= 0, got {self.early_success_threshold!r}")

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["traversal_strategy"] = self.traversal_strategy.value
        return data


def with_options(base: ToTOptions | None = None, **values: Any) -> ToTOptions:
    """``base`` (default :class:`ToTOptions`) with ``values`` replaced. When ``max_depth`` is lowered below
    the default ``min_depth`` without a ``min_depth`` of its own, ``min_depth`` follows it down (so
    ``max_depth=1`` alone is valid); an explicit conflicting pair still raises :class:`ToTError`."""
    base = base or ToTOptions()
    if "max_depth" in values and "min_depth" not in values and base.min_depth > values["max_depth"]:
        values["min_depth"] = max(0, values["max_depth"]) if isinstance(values["max_depth"], int) else base.min_depth
    return replace(base, **values) if values else base

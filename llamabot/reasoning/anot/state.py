"""The shared-state contract of the ANoT graph, and the result a run returns.

Keys of the shared dict (fresh for every run, see :func:`new_anot_state`):

| key | set by | meaning |
|---|---|---|
| ``query``, ``items``, ``n_items`` | caller | the request and the items (1-indexed in LWT) |
| ``tag``, ``trace_id`` | caller | the request tag (``R00``) of debug lines; the run's trace id |
| ``strategy``, ``strategy_text`` | ``StrategyNode`` | phase 1's validated strategy (None if it failed) and its text form |
| ``draft``, ``script`` | ``LWTStartNode`` | the draft compiled from the strategy; the script phase 2 edits (a list of :class:`LWTStep`, changed in place by the tools) |
| ``memory``, ``func_call``, ``iteration_count``, ``result``, ``_pending``, ``_run_start``, ``_errors``, ``_done`` | ``LWTStartNode``, then phase 2's agent nodes | the agent's run state (see :mod:`llamabot.agents.agent_state`): the agent nodes share the ANoT dict, no key clashes |
| ``steps``, ``layers`` | ``LWTEndNode`` (or ``execute``) | the LWT script to run and its execution layers |
| ``phase2`` | ``LWTStartNode``, the tools, ``LWTEndNode`` | ``iterations``, ``tool_calls``, ``fallback`` (the script run when the agent failed) and ``error`` |
| ``layer``, ``outputs`` | ``LayerNode`` | the next layer to run; step id -> output |
| ``ranking``, ``score_ranking`` | ``RankNode`` | the final ranking, and the ranking by condition scores alone |
| ``errors`` | any | what went wrong without stopping the run |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llamabot.graph.mermaid import MermaidDiagram
from llamabot.observe.tracing import Trace
from llamabot.reasoning.anot.lwt import LWTStep, render_lwt
from llamabot.reasoning.anot.mermaid import lwt_mermaid
from llamabot.reasoning.anot.ranking import Ranking
from llamabot.reasoning.anot.stats import PhaseStats, total
from llamabot.reasoning.anot.strategy import Strategy


def new_anot_state(query: str, items: Sequence[Any], *, tag: str = "R00", trace_id: str = "") -> dict[str, Any]:
    """A fresh shared dict for one run: nothing is carried over from another run. Data only (it can be saved
    with :mod:`llamabot.graph.codec` at every node boundary); the live side of a run (its trace, the debug
    log) is in the run context (``current_run()``)."""
    if not items:
        raise ValueError("ANoT needs at least one item to rank")
    return {
        "query": query,
        "items": list(items),
        "n_items": len(items),
        "tag": tag,
        "trace_id": trace_id,
        "strategy": None,
        "strategy_text": "",
        "draft": [],
        "script": [],
        "phase2": {},
        # phase 2's agent run state (filled by LWTStartNode; see llamabot.agents.agent_state)
        "memory": [],
        "func_call": None,
        "iteration_count": 0,
        "result": None,
        "_pending": [],
        "_run_start": 0,
        "_errors": 0,
        "_done": False,
        "steps": [],
        "layers": [],
        "layer": 0,
        "outputs": {},
        "ranking": None,
        "score_ranking": None,
        "final_ranking": None,
        "errors": [],
    }


@dataclass
class ANoTResult:
    """What an ANoT run produced. ``ranking.indices`` are item numbers, 1-indexed, best first."""

    ranking: Ranking
    score_ranking: Ranking
    final_ranking: Ranking
    strategy: Strategy | None
    strategy_text: str
    steps: list[LWTStep]
    outputs: dict[str, str]
    phase2: dict[str, Any]
    errors: list[str]
    stats: dict[str, PhaseStats]
    trace: Trace
    n_items: int

    @property
    def best(self) -> int | None:
        """The best item's number (1-indexed)."""
        return self.ranking.best

    @property
    def lwt(self) -> str:
        """The executed LWT script."""
        return render_lwt(self.steps)

    def lwt_mermaid(self) -> MermaidDiagram:
        """The executed script's dependency DAG (renders as a diagram in notebooks)."""
        return MermaidDiagram(lwt_mermaid(self.steps))

    @property
    def totals(self) -> PhaseStats:
        return total(self.stats)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record of the run (without the trace)."""
        return {
            **self.ranking.record(),
            "score_ranking": list(self.score_ranking.indices),
            "final_ranking": list(self.final_ranking.indices),
            "final_ranking_source": self.final_ranking.source,
            "strategy": self.strategy.model_dump() if self.strategy else None,
            "strategy_text": self.strategy_text,
            "lwt": self.lwt,
            "outputs": self.outputs,
            "phase2": self.phase2,
            "errors": self.errors,
            "phases": {name: s.to_dict() for name, s in self.stats.items()},
            "trace_id": self.trace.trace_id,
        }

"""The result of a Tree-of-Thoughts search, built from a finished machine (the seed's ``Result.build``). Pure.

- ``best``: the solution node (the thought that ended the search, or the best-ranked leaf), with its path;
- ``candidates``: the ``top_k`` ranked leaves, each with its root-to-leaf path (ids and texts);
- ``solution_path``: node ids from the root to ``best``;
- ``termination``: reason, status, depth reached, node count, duration;
- ``usage``: tokens over every model call; ``diagnostics``: parser modes, retries, errors, convergence;
- ``answer``: what the task makes of the solution path (a Game-of-24 expression...), when the driver knows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from llamabot.reasoning.tot.machine import ToTMachine, path_texts
from llamabot.reasoning.tot.tree import get_node, get_path_to_node, ranked_leaves


@dataclass(frozen=True, slots=True)
class Candidate:
    """A leaf and the path that leads to it (``path_text`` excludes the problem)."""

    node_id: str
    content: str
    score: float | None
    depth: int
    path_ids: tuple[str, ...]
    path_text: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Termination:
    """Why and when the search stopped. ``duration_ms`` is ``None`` when no clock was given."""

    reason: str | None
    status: str
    depth_reached: int
    node_count: int
    duration_ms: float | None


@dataclass(frozen=True)
class ToTResult:
    """What a search produced. ``machine`` is the final machine (for the tree view and further analysis)."""

    best: Candidate | None
    candidates: tuple[Candidate, ...]
    solution_path: tuple[str, ...]
    termination: Termination
    usage: dict[str, int]
    diagnostics: dict[str, Any]
    answer: str | None = None
    machine: ToTMachine | None = field(default=None, repr=False, compare=False)

    @property
    def solved(self) -> bool:
        """The search completed with a solution path (not an error)."""
        return self.termination.status == "completed" and bool(self.solution_path)

    @property
    def solution_text(self) -> tuple[str, ...]:
        """The thoughts along ``solution_path`` (the problem excluded)."""
        return self.best.path_text if self.best else ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (without the machine)."""
        data = {name: getattr(self, name) for name in ("solution_path", "usage", "diagnostics", "answer")}
        data["best"] = asdict(self.best) if self.best else None
        data["candidates"] = [asdict(c) for c in self.candidates]
        data["termination"] = asdict(self.termination)
        data["solution_path"] = list(self.solution_path)
        return data

    def to_mermaid(self) -> Any:
        """The explored tree as a mermaid diagram, scores shown and the solution path highlighted."""
        from llamabot.reasoning.tot.mermaid import tree_to_mermaid

        if self.machine is None:
            raise ValueError("this result carries no machine to draw; build it with build_result(machine)")
        return tree_to_mermaid(self.machine)


def candidate(machine: ToTMachine, node_id: str) -> Candidate:
    """The :class:`Candidate` for ``node_id``."""
    node = get_node(machine, node_id)
    if node is None:
        raise KeyError(f"no node {node_id!r} in this tree")
    ids = tuple(n.id for n in get_path_to_node(machine, node_id))
    return Candidate(node.id, node.content, node.score, node.depth, ids, path_texts(machine, node_id))


def build_result(machine: ToTMachine, answer: str | None = None) -> ToTResult:
    """The result of ``machine`` as it stands (normally once ``completed`` or ``error``)."""
    options = machine.options
    ranked = [candidate(machine, leaf.id) for leaf in ranked_leaves(machine, options.min_depth)]
    best = candidate(machine, machine.solution_path[-1]) if machine.solution_path else None
    if best is not None:
        ranked = [best, *(c for c in ranked if c.node_id != best.node_id)]
    elif ranked and machine.status.value != "error":
        best = ranked[0]
    duration = None
    if machine.started_at_ms is not None and machine.finished_at_ms is not None:
        duration = machine.finished_at_ms - machine.started_at_ms
    reason = machine.termination_reason.value if machine.termination_reason else None
    termination = Termination(
        reason=reason,
        status=machine.status.value,
        depth_reached=max((n.depth for n in machine.nodes.values()), default=0),
        node_count=len(machine.nodes),
        duration_ms=duration,
    )
    diagnostics = {
        "parser_mode": machine.parser_mode,
        "parse_retries": dict(machine.parse_retries),
        "parser_errors": list(machine.parser_errors),
        "closed_nodes": list(machine.closed_nodes),
        "rejected_steps": list(machine.rejected_steps),
        "convergence": {
            "window": options.convergence_window,
            "min_score_improvement": options.min_score_improvement,
            "recent_best_scores": list(machine.recent_best_scores),
        },
        "tree": {
            "node_count": len(machine.nodes),
            "frontier_size": len(machine.frontier),
            "traversal_strategy": options.traversal_strategy.value,
            "max_depth": options.max_depth,
            "branching_factor": options.branching_factor,
        },
        "best_node_id": best.node_id if best else None,
        "error": machine.error,
    }
    return ToTResult(
        best=best,
        candidates=tuple(ranked[: options.top_k]),
        solution_path=machine.solution_path,
        termination=termination,
        usage=dict(machine.usage),
        diagnostics=diagnostics,
        answer=answer,
        machine=machine,
    )

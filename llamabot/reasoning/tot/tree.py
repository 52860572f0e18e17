"""The thought tree: nodes and the read-only functions over them. Pure.

A tree is a mapping ``node_id -> ThoughtNode`` in creation order. The root holds the problem (depth 0, no score);
every other node is one thought, scored when it was evaluated. The functions take anything with a ``nodes``
mapping (the machine, usually) so they read like the seed's ``get_node(machine, id)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from llamabot.reasoning.tot.options import ToTOptions, Traversal


@dataclass(frozen=True, slots=True)
class ThoughtNode:
    """One node of the tree. ``children`` are node ids in creation order; ``score`` is in [0, 1] or ``None``
    (the root, which is never scored)."""

    id: str
    parent_id: str | None
    content: str
    score: float | None
    children: tuple[str, ...]
    depth: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "content": self.content,
            "score": self.score,
            "children": list(self.children),
            "depth": self.depth,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThoughtNode:
        score = data.get("score")
        return cls(
            id=str(data["id"]),
            parent_id=data.get("parent_id"),
            content=str(data.get("content", "")),
            score=None if score is None else float(score),
            children=tuple(data.get("children") or ()),
            depth=int(data.get("depth", 0)),
        )


class HasNodes(Protocol):
    @property
    def nodes(self) -> Mapping[str, ThoughtNode]: ...


def get_node(tree: HasNodes, node_id: str | None) -> ThoughtNode | None:
    """The node ``node_id``, or ``None`` when the tree has no such node."""
    return tree.nodes.get(node_id) if node_id is not None else None


def get_children(tree: HasNodes, node_id: str) -> list[ThoughtNode]:
    """The children of ``node_id`` in creation order (empty for a leaf or an unknown id)."""
    node = get_node(tree, node_id)
    if node is None:
        return []
    return [tree.nodes[child] for child in node.children if child in tree.nodes]


def get_path_to_node(tree: HasNodes, node_id: str) -> list[ThoughtNode]:
    """The nodes from the root down to ``node_id`` (both included); empty for an unknown id.

    Bounded by the number of nodes, so a corrupted tree with a parent cycle cannot loop forever.
    """
    path: list[ThoughtNode] = []
    current = get_node(tree, node_id)
    while current is not None and len(path) <= len(tree.nodes):
        path.append(current)
        current = get_node(tree, current.parent_id)
    path.reverse()
    return path


def find_leaves(tree: HasNodes) -> list[ThoughtNode]:
    """Every node without children, in creation order (the root too, while it has none)."""
    return [node for node in tree.nodes.values() if not node.children]


def ranked_leaves(tree: HasNodes, min_depth: int = 0) -> list[ThoughtNode]:
    """The scored leaves, best first.

    Ranking: leaves at least ``min_depth`` deep come before shallower ones (a thought shallower than
    ``min_depth`` is not an answer yet), then higher score, then deeper, then earlier created.
    """
    order = {node_id: index for index, node_id in enumerate(tree.nodes)}
    scored = [node for node in find_leaves(tree) if node.score is not None]
    return sorted(scored, key=lambda n: (n.depth < min_depth, -(n.score or 0.0), -n.depth, order[n.id]))


def find_best_leaf(tree: HasNodes, min_depth: int | None = None) -> ThoughtNode | None:
    """The best scored leaf (see :func:`ranked_leaves`), or ``None`` when nothing is scored yet.

    ``min_depth`` defaults to the machine's option of that name when ``tree`` is a machine.
    """
    if min_depth is None:
        min_depth = getattr(getattr(tree, "options", None), "min_depth", 0)
    ranked = ranked_leaves(tree, min_depth)
    return ranked[0] if ranked else None


def grow_frontier(nodes: Mapping[str, ThoughtNode], frontier: tuple[str, ...], new: list[str],
                  options: ToTOptions) -> tuple[str, ...]:
    """The frontier with ``new`` node ids added as the traversal strategy orders it: ``bfs`` appends, ``dfs``
    prepends, ``best_first`` sorts stably by score (ties: the older node first, or the deeper one with
    ``prefer_deeper``) and keeps ``beam_width``."""
    strategy = options.traversal_strategy
    if strategy is Traversal.BFS:
        return (*frontier, *new)
    if strategy is Traversal.DFS:
        return (*new, *frontier)
    deeper = options.prefer_deeper
    ranked = sorted((*frontier, *new),  # stable: other ties keep frontier order
                    key=lambda node_id: (-(nodes[node_id].score or 0.0), -nodes[node_id].depth if deeper else 0))
    width = options.beam_width
    return tuple(ranked[:width] if width else ranked)

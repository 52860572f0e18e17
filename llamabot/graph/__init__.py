"""The graph engine: strict PocketFlow flows, the dual sync/async node, mermaid diagrams, the run-state codec and
checkpoints. It knows nothing of models, tools or agents (``tests/test_layers.py``): the nodes and bots built on
it, and the one import a composed graph needs, are in :mod:`llamabot.agents`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llamabot.lazy import lazy_attributes

_EXPORTS: dict[str, str] = {
    "Node": "pocketflow",
    "AsyncNode": "pocketflow",
    "Flow": "llamabot.graph.flow",
    "AsyncFlow": "llamabot.graph.flow",
    "DualNode": "llamabot.graph.flow",
    "Checkpoint": "llamabot.graph.checkpoint",
}

__all__ = ["AsyncFlow", "AsyncNode", "Checkpoint", "DualNode", "Flow", "Node"]

if TYPE_CHECKING:
    from pocketflow import AsyncNode, Node

    from llamabot.graph.checkpoint import Checkpoint
    from llamabot.graph.flow import AsyncFlow, DualNode, Flow

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals(), __all__)

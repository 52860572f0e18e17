"""The graph layer: strict PocketFlow flows, the dual sync/async node, the node kinds every pattern is built from
(``DecideNode`` picks tools, ``FuncNode`` runs one tool), the agent's run state and one mermaid renderer.

Composition from one import: ``from llamabot.graph import Node, AsyncNode, Flow, AsyncFlow, DualNode, DecideNode,
FuncNode, GraphBot`` (loaded on first use); ``GraphBot.from_flow(start)`` makes a bot of a hand-made graph.
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
    "DecideNode": "llamabot.graph.nodes",
    "FuncNode": "llamabot.graph.nodes",
    "GraphBot": "llamabot.graph.graphbot",
    "FlowBot": "llamabot.graph.flowbot",
    "Checkpoint": "llamabot.graph.checkpoint",
    "ApprovalRequired": "llamabot.graph.approval",
    "PausedRun": "llamabot.graph.approval",
}

__all__ = ["ApprovalRequired", "AsyncFlow", "AsyncNode", "Checkpoint", "DecideNode", "DualNode", "Flow", "FlowBot",
           "FuncNode", "GraphBot", "Node", "PausedRun"]

if TYPE_CHECKING:
    from pocketflow import AsyncNode, Node

    from llamabot.graph.approval import ApprovalRequired, PausedRun
    from llamabot.graph.checkpoint import Checkpoint
    from llamabot.graph.flow import AsyncFlow, DualNode, Flow
    from llamabot.graph.flowbot import FlowBot
    from llamabot.graph.graphbot import GraphBot
    from llamabot.graph.nodes import DecideNode, FuncNode

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals(), __all__)

"""The graph engine: strict PocketFlow flows, the dual sync/async node, mermaid diagrams, the run-state codec and
checkpoints. It knows nothing of models, tools or agents (``tests/test_layers.py``).

Composition from one import: ``from llamabot.graph import Node, AsyncNode, Flow, AsyncFlow, DualNode, DecideNode,
FuncNode, GraphBot, from_flow`` — the engine's names, and, loaded on first use, the agent layer's nodes and graph
bots (``llamabot.agents``) that composing a graph needs.
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
    # the agent layer's names a composed graph uses (lazy: the engine never imports them)
    "DecideNode": "llamabot.agents.nodes",
    "FuncNode": "llamabot.agents.nodes",
    "GraphBot": "llamabot.agents.graphbot",
    "FlowBot": "llamabot.agents.flowbot",
    "from_flow": "llamabot.agents.flowbot",
    "ApprovalRequired": "llamabot.agents.approval",
    "PausedRun": "llamabot.agents.approval",
}

__all__ = ["ApprovalRequired", "AsyncFlow", "AsyncNode", "Checkpoint", "DecideNode", "DualNode", "Flow", "FlowBot",
           "FuncNode", "GraphBot", "Node", "PausedRun", "from_flow"]

if TYPE_CHECKING:  # for type checkers only (tests/test_layers.py allows this facade and nothing else upward)
    from pocketflow import AsyncNode, Node

    from llamabot.agents.approval import ApprovalRequired, PausedRun
    from llamabot.agents.flowbot import FlowBot, from_flow
    from llamabot.agents.graphbot import GraphBot
    from llamabot.agents.nodes import DecideNode, FuncNode
    from llamabot.graph.checkpoint import Checkpoint
    from llamabot.graph.flow import AsyncFlow, DualNode, Flow

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals(), __all__)

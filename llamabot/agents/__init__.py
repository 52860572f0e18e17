"""The agents layer: bots built as graphs on the graph engine (``llamabot.graph``).

``GraphBot`` (the surface every graph bot shares: runs, streams, hooks, limits, approvals, deps, checkpoints),
the agent's nodes (``DecideNode`` picks tools through a ``ToolBot``, ``FuncNode`` runs one tool), its run state,
decisions, parallel calls, the layer node (``LayerNode``: independent items at once, bounded), the structured
node (``StructuredNode``: one validated answer through ``StructuredBot``'s exchange) and approvals,
``from_flow`` (any hand-made graph as a bot), agents as tools, and ``AgentBot`` (the reference graph). The
reasoning patterns (``llamabot.reasoning``) are graph bots too.

Composition from one import: ``from llamabot.agents import Node, AsyncNode, Flow, AsyncFlow, DualNode,
DecideNode, FuncNode, LayerNode, StructuredNode, GraphBot, from_flow`` (the engine's names with the agent layer's;
loaded on first use).
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
    "DecideNode": "llamabot.agents.nodes",
    "FuncNode": "llamabot.agents.nodes",
    "LayerNode": "llamabot.agents.layer",
    "StructuredNode": "llamabot.agents.structured",
    "GraphBot": "llamabot.agents.graphbot",
    "FlowBot": "llamabot.agents.flowbot",
    "from_flow": "llamabot.agents.flowbot",
    "ApprovalRequired": "llamabot.agents.approval",
    "PausedRun": "llamabot.agents.approval",
    "AgentBot": "llamabot.agents.agentbot",
    "AsyncAgentBot": "llamabot.agents.agentbot",
}

__all__ = ["AgentBot", "ApprovalRequired", "AsyncAgentBot", "AsyncFlow", "AsyncNode", "Checkpoint", "DecideNode",
           "DualNode", "Flow", "FlowBot", "FuncNode", "GraphBot", "LayerNode", "Node", "PausedRun",
           "StructuredNode", "from_flow"]

if TYPE_CHECKING:
    from pocketflow import AsyncNode, Node

    from llamabot.agents.agentbot import AgentBot, AsyncAgentBot
    from llamabot.agents.approval import ApprovalRequired, PausedRun
    from llamabot.agents.flowbot import FlowBot, from_flow
    from llamabot.agents.graphbot import GraphBot
    from llamabot.agents.layer import LayerNode
    from llamabot.agents.nodes import DecideNode, FuncNode
    from llamabot.agents.structured import StructuredNode
    from llamabot.graph.checkpoint import Checkpoint
    from llamabot.graph.flow import AsyncFlow, DualNode, Flow

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals(), __all__)

"""llamabot: LLM agents as PocketFlow graphs.

Public names are imported lazily, so ``import llamabot`` stays cheap: LiteLLM (about 3 s) and llama.cpp are
imported on the first model call, never at import.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from loguru import logger as _logger

from llamabot.lazy import lazy_attributes

# Never fetch LiteLLM's cost map over the network at import (unless the user chose otherwise).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# A library leaves logging sinks alone; users opt in with `logger.enable("llamabot")`.
_logger.disable("llamabot")

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AgentBot": "llamabot.agents.agentbot",
    "AsyncAgentBot": "llamabot.agents.agentbot",
    "RunEvent": "llamabot.observe.events",
    "RunHooks": "llamabot.observe.hooks",
    "GraphBot": "llamabot.agents.graphbot",
    "to_mermaid": "llamabot.graph.mermaid",
    "tool": "llamabot.tools",
    "Tool": "llamabot.tools",
    "DEFAULT_TOOLS": "llamabot.tools",
    "SimpleBot": "llamabot.bot.simplebot",
    "AsyncSimpleBot": "llamabot.bot.simplebot",
    "StructuredBot": "llamabot.bot.structuredbot",
    "AsyncStructuredBot": "llamabot.bot.structuredbot",
    "ToolBot": "llamabot.bot.toolbot",
    "AsyncToolBot": "llamabot.bot.toolbot",
    "ScriptedModel": "llamabot.models.scripted",
    "Trace": "llamabot.observe.tracing",
    "RunUsage": "llamabot.observe.usage",
    "UsageLimits": "llamabot.observe.usage",
    "UsageLimitExceeded": "llamabot.observe.usage",
    "get_model": "llamabot.models.resolve",
    "default_model_name": "llamabot.models.resolve",
    "ModelSettings": "llamabot.models.settings",
    "ApprovalRequest": "llamabot.tools.approval",
    "Decision": "llamabot.tools.approval",
    "ApprovalRequired": "llamabot.agents.approval",
    "PausedRun": "llamabot.agents.approval",
    "RunContext": "llamabot.tools.context",
}

__all__ = [
    "AgentBot",
    "ApprovalRequest",
    "ApprovalRequired",
    "AsyncAgentBot",
    "Decision",
    "ModelSettings",
    "PausedRun",
    "RunContext",
    "RunEvent",
    "RunHooks",
    "GraphBot",
    "to_mermaid",
    "AsyncSimpleBot",
    "AsyncStructuredBot",
    "AsyncToolBot",
    "DEFAULT_TOOLS",
    "ScriptedModel",
    "SimpleBot",
    "StructuredBot",
    "Tool",
    "ToolBot",
    "Trace",
    "RunUsage",
    "UsageLimits",
    "UsageLimitExceeded",
    "default_model_name",
    "get_model",
    "tool",
]

if TYPE_CHECKING:
    from llamabot.agents.agentbot import AgentBot, AsyncAgentBot
    from llamabot.agents.approval import ApprovalRequired, PausedRun
    from llamabot.agents.graphbot import GraphBot
    from llamabot.bot.simplebot import AsyncSimpleBot, SimpleBot
    from llamabot.bot.structuredbot import AsyncStructuredBot, StructuredBot
    from llamabot.bot.toolbot import AsyncToolBot, ToolBot
    from llamabot.graph.mermaid import to_mermaid
    from llamabot.models.resolve import default_model_name, get_model
    from llamabot.models.scripted import ScriptedModel
    from llamabot.models.settings import ModelSettings
    from llamabot.observe.events import RunEvent
    from llamabot.observe.hooks import RunHooks
    from llamabot.observe.tracing import Trace
    from llamabot.observe.usage import RunUsage, UsageLimitExceeded, UsageLimits
    from llamabot.tools import DEFAULT_TOOLS, Tool, tool
    from llamabot.tools.approval import ApprovalRequest, Decision
    from llamabot.tools.context import RunContext


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals(), __all__)

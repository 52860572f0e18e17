"""Bots that talk to models. Each has an async twin sharing its logic; only the model call differs."""

from llamabot.bot.simplebot import AsyncSimpleBot, SimpleBot
from llamabot.bot.structuredbot import AsyncStructuredBot, StructuredBot
from llamabot.bot.toolbot import AsyncToolBot, ToolBot, ToolBotReply, ToolCall

__all__ = [
    "AsyncSimpleBot", "AsyncStructuredBot", "AsyncToolBot", "SimpleBot", "StructuredBot", "ToolBot",
    "ToolBotReply", "ToolCall",
]

"""Tools: ``@tool`` turns typed functions into tool descriptions; ``DEFAULT_TOOLS`` ships with every agent."""

from llamabot.tools.defaults import (
    DEFAULT_TOOLS,
    inspect_globals,
    respond_to_user,
    return_object_to_user,
    today_date,
)
from llamabot.tools.tool import DECIDE, Tool, as_tool, build_tool, tool

__all__ = [
    "DECIDE",
    "DEFAULT_TOOLS",
    "Tool",
    "as_tool",
    "build_tool",
    "inspect_globals",
    "respond_to_user",
    "return_object_to_user",
    "today_date",
    "tool",
]

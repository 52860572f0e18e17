"""Tools: ``@tool`` turns typed functions into tool descriptions; ``DEFAULT_TOOLS`` ships with every agent;
``llamabot.tools.call`` is the one logic that calls a tool (validation, timeout, retries, sync or async)."""

from llamabot.tools.call import ToolOutcome, ainvoke_tool, invoke_tool
from llamabot.tools.context import RunContext
from llamabot.tools.defaults import (
    DEFAULT_TOOLS,
    inspect_globals,
    respond_to_user,
    return_object_to_user,
    today_date,
)
from llamabot.tools.retry import Retry
from llamabot.tools.schema_tool import schema_tool
from llamabot.tools.tool import DECIDE, Tool, as_tool, build_tool, tool

__all__ = [
    "DECIDE",
    "DEFAULT_TOOLS",
    "Retry",
    "RunContext",
    "ToolOutcome",
    "ainvoke_tool",
    "invoke_tool",
    "schema_tool",
    "Tool",
    "as_tool",
    "build_tool",
    "inspect_globals",
    "respond_to_user",
    "return_object_to_user",
    "today_date",
    "tool",
]

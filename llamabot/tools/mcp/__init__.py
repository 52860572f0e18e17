"""MCP servers as tools: ``mcp_tools("python server.py")`` or ``mcp_tools("http://127.0.0.1:8000/mcp")`` returns
the server's tools, which any bot takes like ``@tool`` functions, and the handle that stops the server.

    with mcp_tools("python server.py") as tools:
        AgentBot(tools=tools)("...")

Built on the ``mcp`` package's client (importing this package imports it).
"""

from llamabot.errors import MCPServerError
from llamabot.tools.mcp.connection import MCPConnection
from llamabot.tools.mcp.limits import MCPLimits, MCPTimeoutError
from llamabot.tools.mcp.results import MCPToolError
from llamabot.tools.mcp.server import MCPServerSpec, server_spec
from llamabot.tools.mcp.toolset import MCPToolFunction, MCPTools, mcp_tools

__all__ = [
    "MCPConnection",
    "MCPLimits",
    "MCPServerError",
    "MCPServerSpec",
    "MCPTimeoutError",
    "MCPToolError",
    "MCPToolFunction",
    "MCPTools",
    "mcp_tools",
    "server_spec",
]

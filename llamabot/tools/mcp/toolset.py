"""``mcp_tools(server)``: the tools of an MCP server as llamabot tools, and the handle that closes the server.

Each server tool becomes a schema-first :class:`Tool` (:func:`llamabot.tools.schema_tool.schema_tool`): the
server's ``inputSchema`` is what the model sees and what its arguments are checked against, as they are. A bot
takes them like ``@tool`` functions (``AgentBot(tools=mcp)``, ``AoTBot(tools=[*mcp, ...])``, a custom graph's
``FuncNode``); sync runs call them through :meth:`MCPToolFunction.__call__`, async runs await
:meth:`MCPToolFunction.acall`, both through the one :class:`MCPConnection`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from llamabot.errors import MCPServerError, ToolDefinitionError
from llamabot.tools.closing import Closing
from llamabot.tools.mcp.connection import CONNECT_TIMEOUT, MCPConnection
from llamabot.tools.mcp.limits import MCPLimits
from llamabot.tools.mcp.results import result_value
from llamabot.tools.mcp.server import server_spec
from llamabot.tools.retry import Retry
from llamabot.tools.schema_tool import schema_tool
from llamabot.tools.tool import Tool

_NOT_A_NAME_CHAR = re.compile(r"[^A-Za-z0-9_-]")


class MCPToolFunction:
    """The function of one MCP tool: ``fn(**arguments)`` calls it and waits, ``await fn.acall(**arguments)``
    awaits it; both return :func:`result_value`. ``close()`` closes the server (every tool of it): a bot's
    ``close()`` calls it."""

    __slots__ = ("connection", "remote_name", "output_schema", "__name__")

    def __init__(
        self, connection: MCPConnection, remote_name: str, output_schema: dict[str, Any] | None, name: str
    ):
        self.connection = connection
        self.remote_name = remote_name  # the server's name for it (``name`` may carry a prefix)
        self.output_schema = output_schema
        self.__name__ = name

    def __call__(self, **arguments: Any) -> Any:
        return self._value(self.connection.call(self.remote_name, arguments))

    async def acall(self, **arguments: Any) -> Any:
        return self._value(await self.connection.acall(self.remote_name, arguments))

    def _value(self, result: Any) -> Any:
        return result_value(result, self.output_schema, self.connection.spec.label, self.remote_name)

    def close(self) -> None:
        self.connection.close()

    def __repr__(self) -> str:
        return f"<MCP tool {self.remote_name!r} of {self.connection.spec.label!r}>"


class MCPTools(Closing, Sequence[Tool]):
    """The tools of one MCP server (a sequence of :class:`Tool`) and the handle of its session.

    ``close()`` (or leaving ``with mcp_tools(...) as tools:``, sync or async) stops the server; so does closing a
    bot that has any of these tools (``bot.close()``, ``with AgentBot(...) as bot:``). ``server`` names it.
    """

    def __init__(self, connection: MCPConnection, tools: Sequence[Tool]):
        self._connection = connection
        self._tools = tuple(tools)

    @property
    def server(self) -> str:
        return self._connection.spec.label

    @property
    def closed(self) -> bool:
        return self._connection.closed

    @overload
    def __getitem__(self, index: int) -> Tool: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Tool]: ...

    def __getitem__(self, index: int | slice) -> Tool | Sequence[Tool]:
        return self._tools[index]

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self._tools]

    def close(self) -> None:
        """Stop the server (idempotent). Calls after it raise :class:`MCPServerError`."""
        self._connection.close()

    async def aclose(self) -> None:
        """:meth:`close` without blocking the event loop."""
        await asyncio.to_thread(self._connection.close)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"MCPTools({self.server!r}, {state}, tools={self.names})"


def mcp_tools(
    server: str | Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    only: Iterable[str] | None = None,
    prefix: str = "",
    timeout: float | None = None,
    retries: int | None = None,
    retry: Retry | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
    call_timeout: float | None | Literal["default"] = "default",
    requires_approval: bool | Iterable[str] = False,
) -> MCPTools:
    """Start or reach the MCP server ``server`` and return its tools.

    ``server``: a command line (``"python server.py"``, split as a shell would; or an argv list), run as a
    subprocess speaking MCP on stdin/stdout, with ``env`` added to the few variables it inherits and ``cwd``; or an
    ``http://``/``https://`` URL of a streamable-HTTP server. ``only``: the server tools to keep (by their server
    names; default all). ``prefix`` is put before each name (two servers with a tool of the same name); characters
    a model API does not accept in a name become ``_``. ``timeout``/``retries``/``retry``: every tool's policy, as
    ``@tool``'s. ``call_timeout``: seconds the server may take to answer one call before the request is cancelled
    and the call raises :class:`~llamabot.tools.mcp.limits.MCPTimeoutError` (shown to the model); by default
    ``$LLAMABOT_MCP_TIMEOUT`` or 60 s; ``None``: no limit. Raises :class:`MCPServerError` when the server cannot be
    started or reached, :class:`~llamabot.errors.SettingsError` for a bad ``call_timeout`` or ``LLAMABOT_MCP_*``
    variable, and :class:`ToolDefinitionError` naming the server and the tool (after stopping the server) when
    ``only`` names a tool it does not have, or a tool's description or schema is over its size limit
    (``LLAMABOT_MCP_MAX_DESCRIPTION_CHARS``, ``LLAMABOT_MCP_MAX_SCHEMA_CHARS``) or cannot be used (a ``$ref`` that
    does not resolve, a pattern that does not compile). ``requires_approval``: ``True`` for every tool of the
    server, or the server names of those that need a person's decision before each call (as ``@tool``'s
    ``requires_approval``: no run calls them without one); a name the kept tools do not have is a
    :class:`ToolDefinitionError`.
    """
    limits = MCPLimits.from_env(call_timeout)
    spec = server_spec(server, env=env, cwd=cwd)
    connection = MCPConnection(spec, connect_timeout=connect_timeout, limits=limits)
    try:
        return MCPTools(connection, _tools(connection, only, prefix, timeout, retries, retry, limits,
                                           requires_approval))
    except BaseException:
        connection.close()
        raise


def _tools(
    connection: MCPConnection,
    only: Iterable[str] | None,
    prefix: str,
    timeout: float | None,
    retries: int | None,
    retry: Retry | None,
    limits: MCPLimits,
    requires_approval: bool | Iterable[str] = False,
) -> list[Tool]:
    label = connection.spec.label
    listing = {t.name: t for t in connection.listing}
    wanted = list(listing) if only is None else list(only)
    missing = [n for n in wanted if n not in listing]
    if missing:
        raise ToolDefinitionError(
            f"MCP server {label!r} has no tool {', '.join(map(repr, missing))}; it has: {', '.join(listing) or 'none'}"
        )
    gated = _gated(label, wanted, requires_approval)
    tools: dict[str, Tool] = {}
    for remote_name in wanted:
        remote = listing[remote_name]
        name = _NOT_A_NAME_CHAR.sub("_", prefix + remote_name)[:64]
        if name in tools:
            raise ToolDefinitionError(
                f"MCP server {label!r}: tools {tools[name].func.remote_name!r} and {remote_name!r} both become "
                f"{name!r}; keep one with only=..."
            )
        description = remote.description or remote.title or remote_name.replace("_", " ")
        _check_sizes(label, remote_name, description, remote.input_schema, limits)
        function = MCPToolFunction(connection, remote_name, remote.output_schema, name)
        try:
            tools[name] = schema_tool(
                name,
                description,
                remote.input_schema,
                func=function,
                afunc=function.acall,
                timeout=timeout,
                retries=retries,
                retry=retry,
                requires_approval=remote_name in gated,
            )
        except ToolDefinitionError as exc:
            raise ToolDefinitionError(f"MCP server {label!r}: {exc}") from exc
    return list(tools.values())


def _gated(label: str, wanted: list[str], requires_approval: bool | Iterable[str]) -> set[str]:
    """The server names of the kept tools that require approval: all of them for ``True``, none for ``False``,
    else those named (each must be a kept tool: a name that matches none would leave a tool ungated unsaid)."""
    if isinstance(requires_approval, bool):
        return set(wanted) if requires_approval else set()
    if isinstance(requires_approval, str):
        raise ToolDefinitionError(f"MCP server {label!r}: requires_approval takes True, False or a list of tool "
                                  f"names, not the string {requires_approval!r} (write [{requires_approval!r}])")
    named = set(requires_approval)
    unknown = sorted(named - set(wanted))
    if unknown:
        raise ToolDefinitionError(f"MCP server {label!r}: requires_approval names {', '.join(map(repr, unknown))}, "
                                  f"not among its tools kept: {', '.join(wanted) or 'none'}")
    return named


def _check_sizes(label: str, tool: str, description: str, schema: Any, limits: MCPLimits) -> None:
    """Refuse a description or an input schema over its limit (the model would read it at every turn)."""
    where = f"MCP server {label!r}: tool {tool!r}"
    leave_out = "; leave the tool out with only=[...]"
    if len(description) > limits.max_description_chars:
        raise ToolDefinitionError(
            f"{where}: its description has {len(description)} characters, over the limit of "
            f"{limits.max_description_chars} (LLAMABOT_MCP_MAX_DESCRIPTION_CHARS){leave_out}"
        )
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ToolDefinitionError(f"{where}: its input schema cannot be read as JSON ({exc}){leave_out}") from None
    if size > limits.max_schema_chars:
        raise ToolDefinitionError(
            f"{where}: its input schema has {size} characters as JSON, over the limit of "
            f"{limits.max_schema_chars} (LLAMABOT_MCP_MAX_SCHEMA_CHARS){leave_out}"
        )


__all__ = ["MCPServerError", "MCPToolFunction", "MCPTools", "mcp_tools"]

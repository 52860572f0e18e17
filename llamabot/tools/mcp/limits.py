"""The bounds an MCP server is held to, read from the environment when ``mcp_tools`` is called.

| variable | default | bound on |
|---|---|---|
| ``LLAMABOT_MCP_TIMEOUT`` | 60 s | one tool call: past it the request is cancelled and the call raises :class:`MCPTimeoutError` |
| ``LLAMABOT_MCP_MAX_DESCRIPTION_CHARS`` | 10,000 | a tool's description (the model reads it at every turn) |
| ``LLAMABOT_MCP_MAX_SCHEMA_CHARS`` | 100,000 | a tool's ``inputSchema`` as JSON text |
| ``LLAMABOT_MCP_MAX_MESSAGE_BYTES`` | 32 MiB | one message from a stdio server (a larger response is dropped unread) |
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from llamabot.errors import SettingsError
from llamabot.settings import SETTINGS, setting
from llamabot.tools.mcp.results import MCPToolError


class MCPTimeoutError(MCPToolError, TimeoutError):
    """An MCP server did not answer a tool call within the call timeout; the request was cancelled. Shown to the
    model as the tool's error."""


@dataclass(frozen=True)
class MCPLimits:
    """See the module's table."""

    call_timeout: float | None = SETTINGS["LLAMABOT_MCP_TIMEOUT"].default
    max_description_chars: int = SETTINGS["LLAMABOT_MCP_MAX_DESCRIPTION_CHARS"].default
    max_schema_chars: int = SETTINGS["LLAMABOT_MCP_MAX_SCHEMA_CHARS"].default
    max_message_bytes: int = SETTINGS["LLAMABOT_MCP_MAX_MESSAGE_BYTES"].default

    @classmethod
    def from_env(cls, call_timeout: Any = "default") -> MCPLimits:
        """The limits from the environment; ``call_timeout``, unless ``"default"``, overrides
        ``$LLAMABOT_MCP_TIMEOUT`` (``None``: no limit)."""
        if call_timeout == "default":
            call_timeout = setting("LLAMABOT_MCP_TIMEOUT")
        elif call_timeout is not None and (
            isinstance(call_timeout, bool)
            or not isinstance(call_timeout, (int, float))
            or not (0 < call_timeout and math.isfinite(call_timeout))
        ):
            raise SettingsError(
                f"mcp_tools(call_timeout={call_timeout!r}): give seconds (a number > 0), None for no limit, or "
                "leave it out for $LLAMABOT_MCP_TIMEOUT (60 s by default)"
            )
        return cls(
            call_timeout=call_timeout,
            max_description_chars=setting("LLAMABOT_MCP_MAX_DESCRIPTION_CHARS"),
            max_schema_chars=setting("LLAMABOT_MCP_MAX_SCHEMA_CHARS"),
            max_message_bytes=setting("LLAMABOT_MCP_MAX_MESSAGE_BYTES"),
        )

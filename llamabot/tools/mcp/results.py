"""What an MCP tool call gives the model: the ``CallToolResult`` as a value, or the server's error as an exception.

A result with structured content gives that content (unwrapped from the ``{"result": value}`` object that servers
built with the ``mcp`` package return for a function that returns a non-object, when the tool's output schema is
that wrapper), so a number stays a number for the next atom of an AoT plan. Otherwise the content blocks become
text: text blocks as they are, an embedded text resource as its text, anything else (an image, audio, a blob, a
resource link) as a one-line description. A result marked ``isError`` raises :class:`MCPToolError` with its text:
the model sees it and can correct itself.
"""

from __future__ import annotations

import json
from typing import Any

from llamabot.errors import LlamabotError


class MCPToolError(LlamabotError, RuntimeError):
    """An MCP server answered a tool call with an error (the tool failed, or the request was refused): shown to the
    model as the tool's error. ``server`` and ``tool`` name where it came from."""

    def __init__(self, server: str, tool: str, message: str):
        self.server, self.tool, self.message = server, tool, message
        super().__init__(message or f"tool {tool!r} of MCP server {server!r} failed without a message")


def result_value(result: Any, output_schema: dict[str, Any] | None, server: str, tool: str) -> Any:
    """The value of ``result`` (an ``mcp`` ``CallToolResult``) for the model; raises :class:`MCPToolError` for an
    error result."""
    if result.is_error:
        raise MCPToolError(server, tool, content_text(result.content))
    structured = result.structured_content
    if structured is not None:
        if _is_wrapper(output_schema) and isinstance(structured, dict) and set(structured) == {"result"}:
            return structured["result"]
        return structured
    return content_text(result.content)


def content_text(blocks: list[Any]) -> str:
    """Content blocks as one text (blocks separated by a blank line)."""
    return "\n\n".join(_block_text(block) for block in blocks)


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    if kind == "resource_link":
        return f"[resource {block.name}: {block.uri}]"
    if kind == "resource":
        inner = block.resource
        text = getattr(inner, "text", None)
        if text is not None:
            return text
        return f"[resource {inner.uri}, {inner.mime_type or 'binary'}]"
    return (
        json.dumps(block.model_dump(mode="json", exclude_none=True))
        if hasattr(block, "model_dump")
        else str(block)
    )


def _is_wrapper(schema: dict[str, Any] | None) -> bool:
    """Whether ``schema`` is the ``{"result": ...}`` object an ``mcp`` server wraps a non-object return value in."""
    if not isinstance(schema, dict):
        return False
    properties = schema.get("properties")
    return (
        isinstance(properties, dict)
        and set(properties) == {"result"}
        and schema.get("required") == ["result"]
    )

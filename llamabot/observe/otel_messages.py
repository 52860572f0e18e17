"""Message contents in the OpenTelemetry GenAI conventions' format (``role`` and typed ``parts``): what
:class:`~llamabot.observe.otel.OTelHook` records with ``capture_content=True``. Pure."""

from __future__ import annotations

import json
from typing import Any

from llamabot.observe.tracing import _jsonable


def chat_message(message: dict[str, Any]) -> dict[str, Any]:
    """One OpenAI-format chat message in the GenAI conventions' format (``role`` and typed ``parts``)."""
    role = message.get("role", "user")
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content})
    elif isinstance(content, str):
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):  # multimodal content parts: their text
        parts.extend({"type": "text", "content": p.get("text", "")} for p in content if isinstance(p, dict))
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": _parsed(function.get("arguments")),
            }
        )
    return {"role": role, "parts": parts}


def reply_message(reply: Any) -> dict[str, Any]:
    """A model reply as a GenAI output message (text, tool calls and the finish reason)."""
    message = chat_message(reply.to_message())
    message["finish_reason"] = reply.finish_reason or ("tool_call" if reply.tool_calls else "stop")
    return message


def _text_message(role: str, value: Any) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(_jsonable(value))
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _parsed(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _json(value: Any) -> str:
    return json.dumps(_jsonable(value))

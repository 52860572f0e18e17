"""Pure helpers of the embedded provider: what to constrain, and how to read what came out. No llama.cpp here.

- ``tool_call_schema``: the JSON schema of one tool call, the union (``anyOf``) over the offered tools of
  ``{"name": <const>, "arguments": <that tool's parameters>}``. Compiled to a grammar, it makes a small
  model's tool calls valid by construction.
- ``response_schema``: the JSON schema requested through ``response_format`` (or any JSON for json_object).
- ``template_messages``: OpenAI messages adapted for chat templates (tool-call arguments as objects).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

ANY_JSON_OBJECT: dict[str, Any] = {"type": "object"}


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    return tool.get("function", tool)


def selected_tools(tools: list[dict[str, Any]], tool_choice: Any) -> list[dict[str, Any]]:
    """The tools a forced call may use: one named tool, or all of them."""
    if isinstance(tool_choice, dict):
        wanted = (tool_choice.get("function") or {}).get("name")
        chosen = [t for t in tools if _function(t).get("name") == wanted]
        if not chosen:
            raise ValueError(f"tool_choice names {wanted!r}, which is not among the offered tools")
        return chosen
    return tools


def forces_tool_call(tools: list[dict[str, Any]] | None, tool_choice: Any) -> bool:
    """A call is required when tools are offered and tool_choice is ``required`` or names a function."""
    return bool(tools) and (tool_choice == "required" or isinstance(tool_choice, dict))


def tool_call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The union over ``tools`` of ``{"name": const, "arguments": parameters}`` objects."""
    options = []
    for tool in tools:
        fn = _function(tool)
        parameters = dict(fn.get("parameters") or {"type": "object", "properties": {}})
        parameters.setdefault("type", "object")
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": fn["name"]}, "arguments": parameters},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    return options[0] if len(options) == 1 else {"anyOf": options}


def response_schema(response_format: Any) -> dict[str, Any] | None:
    """The schema a ``response_format`` asks for: json_schema -> its schema; json_object -> any object."""
    if not response_format:
        return None
    if isinstance(response_format, type) and hasattr(response_format, "model_json_schema"):
        return response_format.model_json_schema()
    if not isinstance(response_format, dict):
        raise ValueError(f"unsupported response_format: {response_format!r}")
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        return spec.get("schema") or ANY_JSON_OBJECT
    if kind == "json_object":
        return response_format.get("schema") or ANY_JSON_OBJECT
    if kind == "text":
        return None
    raise ValueError(f"unsupported response_format type {kind!r}; use json_schema or json_object")


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adapt OpenAI messages for Jinja chat templates: tool-call arguments become objects (templates render
    them with ``tojson``), and ``None`` content becomes an empty string."""
    out = []
    for message in messages:
        message = dict(message)
        if message.get("content") is None:
            message["content"] = ""
        elif not isinstance(message["content"], str):
            message["content"] = _flatten_content(message["content"])
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                fn = dict(call.get("function", {}))
                arguments = fn.get("arguments")
                if isinstance(arguments, str):
                    try:
                        fn["arguments"] = json.loads(arguments)
                    except json.JSONDecodeError:
                        pass
                calls.append({**call, "function": fn})
            message["tool_calls"] = calls
        out.append(message)
    return out


def _flatten_content(content: Any) -> str:
    if isinstance(content, list):  # OpenAI content parts: keep the text parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def parse_forced_call(text: str) -> tuple[str, str]:
    """Read the grammar-constrained JSON of a forced tool call: ``(name, arguments_json)``."""
    value = json.loads(text)
    return value["name"], json.dumps(value.get("arguments", {}))


#: The keys of a tool call written as JSON (``{"name": ..., "arguments": ...}``, or the OpenAI shape).
_CALL_KEYS = frozenset({"name", "function", "arguments", "parameters"})


def begun_call(text: str, tools: Sequence[dict[str, Any]] = ()) -> bool:
    """Whether free text that holds no valid call began one, so it must be redone as a forced call: it opens with
    ``<tool_call>``, or with a JSON object that is unfinished, broken, has a call's keys (a call to an unknown
    tool, or with unusable arguments) or only argument names of one of ``tools`` (a call's arguments written
    alone). Any other complete JSON document is an answer, kept as the text."""
    start = text.lstrip()
    if start.startswith("<tool_call>"):
        return True
    if not start.startswith("{"):
        return False
    try:
        value = json.loads(start)
    except (ValueError, RecursionError):
        return True
    if not isinstance(value, dict):
        return False
    if not _CALL_KEYS.isdisjoint(value):
        return True
    return any(value.keys() <= _function(t).get("parameters", {}).get("properties", {}).keys() for t in tools)


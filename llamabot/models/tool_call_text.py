"""Recognise tool calls that a model wrote as text instead of as structured ``tool_calls``. Pure.

Small models often answer ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the Qwen/Hermes
convention), a fenced JSON block, or a bare JSON object. Only objects naming a known tool count, so ordinary
JSON answers are left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)


def extract_tool_calls(text: str | None, tool_names: Collection[str] | None = None) -> list[tuple[str, str]]:
    """Return ``[(name, arguments_json), ...]`` found in ``text``; empty when it holds no tool call.

    ``tool_names`` restricts matches to known tools (recommended); ``None`` accepts any name.
    """
    if not text or not text.strip():
        return []
    candidates = _TAGGED.findall(text) or _FENCED.findall(text) or [text.strip()]
    calls: list[tuple[str, str]] = []
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        for item in value if isinstance(value, list) else [value]:
            call = _as_call(item, tool_names)
            if call is not None:
                calls.append(call)
    return calls


def _as_call(item: Any, tool_names: Collection[str] | None) -> tuple[str, str] | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):  # OpenAI shape {"type": "function", "function": {...}}
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or (tool_names is not None and name not in tool_names):
        return None
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        return name, arguments
    return name, json.dumps(arguments if arguments is not None else {})

"""Recognise tool calls that a model wrote as text instead of as structured ``tool_calls``. Pure, total.

Small models often answer ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the Qwen/Hermes
convention), a fenced JSON block, or a bare JSON object. Only objects naming a known tool count, so ordinary
JSON answers are left alone. Whatever the text (unclosed fences, thousands of nested brackets, numbers past
Python's integer-digit limit), :func:`extract_tool_calls` returns, in time linear in the text's length: a
candidate that does not parse is simply not a tool call.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from llamabot.models.text_fences import fenced_blocks, tagged_blocks

#: What :func:`json.loads` raises on hostile text besides ``JSONDecodeError``: deep nesting
#: (``RecursionError``) and integers past Python's digit limit (a plain ``ValueError``).
JSON_FAILURES = (ValueError, RecursionError)


def loads_or_none(text: str) -> Any | None:
    """``json.loads(text)``, or ``None`` when the text is not JSON that Python can hold (malformed, nested too
    deeply, an integer with too many digits)."""
    try:
        return json.loads(text)
    except JSON_FAILURES:
        return None


def extract_tool_calls(text: str | None, tool_names: Collection[str] | None = None) -> list[tuple[str, str]]:
    """Return ``[(name, arguments_json), ...]`` found in ``text``; empty when it holds no tool call.

    ``tool_names`` restricts matches to known tools (recommended); ``None`` accepts any name.
    """
    if not text or not text.strip():
        return []
    candidates = tagged_blocks(text, "tool_call") or fenced_blocks(text) or [text.strip()]
    calls: list[tuple[str, str]] = []
    for candidate in candidates:
        value = loads_or_none(candidate)
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
    try:
        return name, json.dumps(arguments if arguments is not None else {})
    except (ValueError, RecursionError):  # parsed, so it re-encodes; kept total all the same
        return None

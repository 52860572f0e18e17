"""Data paths over the items: ``[1][attributes][Ambience][hipster]``, walked over plain data only. Pure.

A path selects from the items collection. Its first segment is an item number, **1-indexed** (``[1]`` is the
first item), or ``*`` for every item. The following segments are dict keys, or 0-based indexes into lists
inside an item (``[reviews][0][text]``). A last segment ``~keyword`` searches text: on a string it gives
``True``/``False`` (does it mention the keyword, case-insensitive); on a list it gives how many elements mention
it (strings, or dicts by their ``text``).

Only ``dict`` keys and ``list``/``tuple`` indexes are ever followed: no attribute access, no calls, and a
segment starting with ``__`` is refused. Data is sparse, so a key an item lacks (or a step into ``None`` or a
scalar) gives :data:`MISSING`, rendered ``missing``; a path that can never be valid (bad item number, a
non-integer list index, a dunder, ``~`` not last) raises :class:`DataPathError`.

Accepted spellings: ``[1][attributes]``, ``[1]['attributes']``, ``1.attributes``, ``items[1].attributes``,
``context[1][attributes]``, ``{(context)}[1][attributes]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from llamabot.errors import LlamabotError

ALL_ITEMS = "*"
_ROOTS = ("{(context)}", "{(items)}", "{(input)}", "context", "items", "input")
_TOKEN = re.compile(r"\[([^\[\]]*)\]|([^.\[\]]+)")


class _Missing:
    """A value the data does not have (rendered ``missing``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "missing"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


class DataPathError(LlamabotError, ValueError):
    """A path that cannot be valid. ``path`` is the whole path, ``segment`` the offending part."""

    def __init__(self, path: str, segment: str, reason: str):
        self.path = path
        self.segment = segment
        self.reason = reason
        super().__init__(f"path {path!r}, segment [{segment}]: {reason}")


def parse_path(path: str) -> tuple[str, ...]:
    """Split ``path`` into segments (see the module docstring for the accepted spellings)."""
    text = path.strip()
    for root in _ROOTS:
        if text.startswith(root) and (len(text) == len(root) or text[len(root)] in "[."):
            text = text[len(root) :]
            break
    segments: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos] in ". \t":
            pos += 1
            continue
        match = _TOKEN.match(text, pos)
        if match is None:
            raise DataPathError(path, text[pos:], "unbalanced brackets")
        raw = match.group(1) if match.group(1) is not None else match.group(2)
        segment = raw.strip().strip("'\"").strip()
        if not segment:
            raise DataPathError(path, raw, "empty segment")
        if segment.startswith("__"):
            raise DataPathError(path, segment, "segments starting with '__' are not allowed")
        segments.append(segment)
        pos = match.end()
    for position, segment in enumerate(segments):
        if segment.startswith("~") and position != len(segments) - 1:
            raise DataPathError(path, segment, "a ~keyword search must be the last segment")
    return tuple(segments)


def item_number(segment: str, n_items: int, path: str) -> int | None:
    """The 0-based position of item ``segment`` (1-indexed in paths); ``None`` for ``*``."""
    if segment == ALL_ITEMS:
        return None
    try:
        number = int(segment)
    except ValueError:
        raise DataPathError(path, segment, f"the first segment must be an item number 1..{n_items} or *") from None
    if not 1 <= number <= n_items:
        raise DataPathError(path, segment, f"item numbers are 1-indexed: use 1..{n_items}")
    return number - 1


def _text_of(element: Any) -> str | None:
    if isinstance(element, str):
        return element
    if isinstance(element, dict) and isinstance(element.get("text"), str):
        return element["text"]
    return None


def keyword_search(value: Any, keyword: str, path: str) -> Any:
    """``~keyword`` on ``value``: a bool for text, a count for a list of texts, MISSING for no data."""
    needle = keyword.lower()
    if not needle:
        raise DataPathError(path, "~", "the ~ search needs a keyword, e.g. [~live music]")
    if isinstance(value, str):
        return needle in value.lower()
    if isinstance(value, (list, tuple)):
        return sum(1 for element in value if needle in (_text_of(element) or "").lower())
    if value is None or value is MISSING:
        return MISSING
    raise DataPathError(path, "~" + keyword, f"~ searches text or a list of texts, not a {type(value).__name__}")


def walk(value: Any, segments: Sequence[str], path: str = "") -> Any:
    """Follow ``segments`` (after the item number) from ``value``: dict keys, list indexes, a last ``~``."""
    for segment in segments:
        if segment.startswith("__"):
            raise DataPathError(path, segment, "segments starting with '__' are not allowed")
        if segment.startswith("~"):
            return keyword_search(value, segment[1:].strip(), path)
        if isinstance(value, dict):
            value = value.get(segment, MISSING)
        elif isinstance(value, (list, tuple)):
            try:
                index = int(segment)
            except ValueError:
                raise DataPathError(
                    path, segment, f"this value is a list of {len(value)}; index it with a number 0..{len(value) - 1}"
                ) from None
            value = value[index] if 0 <= index < len(value) else MISSING
        else:
            return MISSING  # a scalar, None or missing value has no fields
    return value


def resolve(items: Sequence[Any], path: str | Sequence[str]) -> Any | list[Any]:
    """The value at ``path`` over ``items``: one value for ``[n]...``, a list (one per item) for ``[*]...``."""
    text = path if isinstance(path, str) else "".join(f"[{s}]" for s in path)
    segments = parse_path(path) if isinstance(path, str) else tuple(path)
    if not segments:
        raise DataPathError(text, "", f"a path starts with an item number 1..{len(items)} or *")
    position = item_number(segments[0], len(items), text)
    if position is None:
        return [walk(item, segments[1:], text) for item in items]
    return walk(items[position], segments[1:], text)


def render_value(value: Any) -> str:
    """A compact text form of a data value: ``True``, ``free``, ``missing``, ``hipster=True, casual=False``."""
    if value is MISSING:
        return "missing"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={render_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + "; ".join(render_value(v) for v in value) + "]"
    return str(value)


def cap(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` characters, saying how much was cut."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"...[truncated {len(text) - max_chars} chars]"


def preview(value: Any, max_chars: int = 1200) -> str:
    """A bounded view of a data value for the ``read`` tool: dict keys with short values, list lengths with a
    first element, long strings cut."""
    if value is MISSING:
        return "missing (no such key here)"
    if isinstance(value, dict):
        parts = [f"{json.dumps(str(k))}: {_short(v)}" for k, v in value.items()]
        return cap("{" + ", ".join(parts) + "}", max_chars)
    if isinstance(value, (list, tuple)):
        head = f"list of {len(value)}"
        if value:
            head += f"; element 0: {_short(value[0], 400)}"
        return cap(head, max_chars)
    return cap(json.dumps(value, default=str) if not isinstance(value, str) else json.dumps(value), max_chars)


def _short(value: Any, limit: int = 60) -> str:
    if isinstance(value, dict):
        keys = list(value)
        shown = ", ".join(f"{k}: {_short(value[k], 20)}" for k in keys[:12])
        return "{" + shown + (", ..." if len(keys) > 12 else "") + "}"
    if isinstance(value, (list, tuple)):
        return f"[list of {len(value)}]"
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + '..."'

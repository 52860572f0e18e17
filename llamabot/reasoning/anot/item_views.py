"""How items are shown to a model. Pure.

- :func:`compact_schema` is what phase 1 sees instead of the items: every field path with its type and one
  example value (taken from the first one or two items that have it), sibling scalars of the same type grouped
  as ``attributes.{GoodForKids, HasTV, ...}: bool e.g. True``, lists summarised by length and element keys.
  Key names are collected over all items (sparse data: a key present in only a few items still shows), values
  only from the examples.
- :func:`render_items_budgeted` is what the CoT baseline sees: every item in full text, cut to an equal share
  of a token budget each (scalars and attributes first, then list fields such as reviews, as far as the share
  lasts).
- :func:`approx_tokens`: a cheap token estimate (about 3.5 characters per token) for budgeting.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

TokenCounter = Callable[[str], int]


def approx_tokens(text: str) -> int:
    """About 3.5 characters per token: a conservative estimate for English and JSON-like text."""
    return math.ceil(len(text) / 3.5)


def _example(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, (str, bool, int, float)) else json.dumps(value, default=str)
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return "text" if isinstance(value, str) else type(value).__name__


def _collect(value: Any, prefix: str, fields: dict[str, dict[str, Any]], example: bool) -> None:
    """Record ``path -> {"value": example, "kind": ...}`` for every dict path under ``value``."""
    for key, child in value.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        entry = fields.setdefault(path, {})
        if isinstance(child, dict):
            entry["kind"] = "dict"
            _collect(child, path, fields, example)
        elif isinstance(child, list):
            entry["kind"] = "list"
            entry["length"] = max(entry.get("length", 0), len(child))
            element = next((e for e in child if isinstance(e, dict)), None)
            if element is not None:
                entry.setdefault("keys", {}).update(dict.fromkeys(element))
        elif child is not None:
            entry.setdefault("type", _type_name(child))
            if example and "value" not in entry:
                entry["value"] = child
        entry.setdefault("kind", "scalar")


def compact_schema(items: Sequence[Any], examples: int = 2) -> str:
    """Field paths, types and example values of ``items`` (see the module docstring)."""
    fields: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(items):
        if isinstance(item, dict):
            _collect(item, "", fields, example=index < examples)
    lines: list[str] = []
    groups: dict[tuple[str, str], list[str]] = {}
    group_example: dict[tuple[str, str], Any] = {}
    for path, entry in fields.items():
        parent, _, key = path.rpartition(".")
        if entry["kind"] == "list":
            keys = ", ".join(entry.get("keys", {}))
            lines.append(f"{path}: list (up to {entry['length']})" + (f" of {{{keys}}}" if keys else ""))
        elif entry["kind"] == "scalar":
            kind = entry.get("type", "null")
            group = (parent, kind)
            groups.setdefault(group, []).append(key)
            if "value" in entry and group not in group_example:
                group_example[group] = entry["value"]
    for (parent, kind), keys in groups.items():
        name = keys[0] if len(keys) == 1 else "{" + ", ".join(keys) + "}"
        path = f"{parent}.{name}" if parent else name
        shown = f" e.g. {_example(group_example[(parent, kind)])}" if (parent, kind) in group_example else ""
        lines.append(f"{path}: {kind if kind != 'null' else 'value'}{shown}")
    return "\n".join(sorted(lines, key=lambda line: (line.count("."), line)))


def _inline(value: dict[str, Any]) -> str:
    """``k=v, sub(k=v, ...)``: a dict's scalars on one line, nested dicts in parentheses, lists left out."""
    return ", ".join(f"{key}({text})" if nested else f"{key}={text}" for key, text, nested in _shown(value))


def _scalar_lines(item: dict[str, Any]) -> list[str]:
    """``key: value`` for top-level scalars, ``key: k=v, ...`` for top-level dicts; lists are left out."""
    return [f"{key}: {text}" for key, text, _ in _shown(item)]


def _shown(value: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """``(key, text, nested)`` for each entry that is not a list: a nested dict as :func:`_inline` text."""
    return [(key, _inline(child), True) if isinstance(child, dict) else (key, str(child), False)
            for key, child in value.items() if not isinstance(child, list)]


def _list_texts(item: dict[str, Any]) -> list[str]:
    texts = []
    for key, child in item.items():
        if isinstance(child, list):
            for element in child:
                if isinstance(element, dict):
                    text = element.get("text")
                    extra = ", ".join(f"{k}={v}" for k, v in element.items() if k != "text" and not isinstance(v, (dict, list)))
                    texts.append(f"- {key}: {text!s}" + (f" ({extra})" if extra else ""))
                else:
                    texts.append(f"- {key}: {element}")
    return texts


def render_item(item: Any, budget_tokens: int, count: TokenCounter = approx_tokens) -> str:
    """One item as text within ``budget_tokens``: its scalar fields (``attributes: WiFi=free, ...``) first, then the
    texts of its list fields (reviews), cut where the budget ends."""
    if not isinstance(item, dict):
        text = str(item)
        limit = max(0, budget_tokens) * 3
        return text if count(text) <= budget_tokens else text[:limit] + "..."
    parts = ["\n".join(_scalar_lines(item))]
    used = count(parts[0])
    for line in _list_texts(item):
        cost = count(line)
        if used + cost > budget_tokens:
            room = budget_tokens - used
            if room > 20:
                parts.append(line[: int(room * 3.5)] + "...")
            break
        parts.append(line)
        used += cost
    text = "\n".join(parts)
    if count(text) > budget_tokens:  # the scalars alone exceed the share
        text = text[: int(budget_tokens * 3.5)] + "..."
    return text


def render_items_budgeted(items: Sequence[Any], budget_tokens: int, count: TokenCounter = approx_tokens) -> str:
    """Every item as ``[n] text``, each within an equal share of ``budget_tokens``."""
    share = max(1, budget_tokens // max(1, len(items)))
    return "\n\n".join(f"[{n}] {render_item(item, share, count)}" for n, item in enumerate(items, start=1))

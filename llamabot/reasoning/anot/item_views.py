"""How items are shown to phase 1. Pure.

:func:`compact_schema` is what phase 1 sees instead of the items: every field path with its type and one
  example value (taken from the first one or two items that have it), sibling scalars of the same type grouped
as ``attributes.{GoodForKids, HasTV, ...}: bool e.g. True``, lists summarised by length and element keys.
Key names are collected over all items (sparse data: a key present in only a few items still shows), values
only from the examples.

(The CoT baseline's view, every item in full text within a token budget, is :mod:`llamabot.evals.anot.cot`'s.)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


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

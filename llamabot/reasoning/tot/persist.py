"""Saving a Tree-of-Thoughts machine as plain JSON and restoring it (the seed's ``to_map`` / ``from_map``). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from enum import Enum
from typing import Any

from llamabot.reasoning.tot.machine import Expansion, Status, TerminationReason, ToTMachine
from llamabot.reasoning.tot.messages import ThoughtEntry
from llamabot.reasoning.tot.options import ToTError, ToTOptions
from llamabot.reasoning.tot.tree import ThoughtNode

__all__ = ["from_dict", "to_dict"]

_TUPLES = ("frontier", "solution_path", "parser_errors", "recent_best_scores", "closed_nodes", "rejected_steps", "continued_nodes",
           "abandoned_calls")


def _entries(data: Any) -> tuple[ThoughtEntry, ...]:
    return tuple(ThoughtEntry(t["id"], t["content"]) for t in data or [])


def _expansion_to_dict(exp: Expansion) -> dict[str, Any]:
    return {"node_id": exp.node_id, "call_id": exp.call_id, "phase": exp.phase, "count": exp.count,
            "pending_thoughts": [{"id": t.id, "content": t.content} for t in exp.pending_thoughts],
            "request_retries": exp.request_retries, "streaming_text": exp.streaming_text}


def _expansion_from_dict(data: Mapping[str, Any]) -> Expansion:
    phase = data.get("phase", "generation")
    if phase not in ("generation", "evaluation"):
        raise ToTError(f"an expansion's phase must be 'generation' or 'evaluation', got {phase!r}")
    return Expansion(str(data["node_id"]), str(data["call_id"]), phase, int(data.get("count", 0)),
                     _entries(data.get("pending_thoughts")), int(data.get("request_retries", 0)),
                     str(data.get("streaming_text", "")))


def to_dict(machine: ToTMachine) -> dict[str, Any]:
    """A JSON-ready dict of the whole machine (the seed's ``to_map``); :func:`from_dict` restores it."""
    data: dict[str, Any] = {}
    for f in fields(machine):
        value = getattr(machine, f.name)
        if f.name == "options":
            value = value.to_dict()
        elif f.name == "nodes":
            value = [node.to_dict() for node in value.values()]
        elif f.name == "active":
            value = [_expansion_to_dict(e) for e in value]
        elif isinstance(value, Enum):
            value = value.value
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, dict):
            value = dict(value)
        data[f.name] = value
    return data


def _legacy_active(data: Mapping[str, Any], status: Status) -> tuple[Expansion, ...]:
    """A dict saved by the one-expansion machine: its ``current_*`` keys as the one expansion in flight."""
    node_id, call_id = data.get("current_node_id"), data.get("current_call_id")
    if status not in (Status.GENERATING, Status.EVALUATING) or node_id is None or call_id is None:
        return ()
    options = ToTOptions(**dict(data.get("options") or {}))
    count = max(0, min(options.branching_factor, options.max_nodes - len(data.get("nodes") or [])))
    phase = "generation" if status is Status.GENERATING else "evaluation"
    return (Expansion(str(node_id), str(call_id), phase, count, _entries(data.get("pending_thoughts")),
                      int(data.get("request_retries", 0)), str(data.get("streaming_text", ""))),)


def from_dict(data: Mapping[str, Any]) -> ToTMachine:
    """Rebuild a machine saved by :func:`to_dict` (the seed's ``from_map``; a dict of the one-expansion machine,
    with ``current_node_id``, restores too). Missing keys take defaults; an unknown status, reason or option
    raises :class:`ToTError` naming it."""
    try:
        options = ToTOptions(**dict(data.get("options") or {}))
        status = Status(data.get("status") or "idle")
        reason = data.get("termination_reason")
        values: dict[str, Any] = {k: data[k] for k in (f.name for f in fields(ToTMachine)) if k in data}
        active = ([_expansion_from_dict(e) for e in data["active"]] if "active" in data
                  else _legacy_active(data, status))
        values.update(
            options=options,
            status=status,
            termination_reason=TerminationReason(reason) if reason else None,
            nodes={n["id"]: ThoughtNode.from_dict(n) for n in data.get("nodes") or []},
            active=tuple(active),
            usage=dict(data.get("usage") or {}),
            parse_retries={"generation": 0, "evaluation": 0, **dict(data.get("parse_retries") or {})},
        )
        for name in _TUPLES:
            values[name] = tuple(data.get(name) or ())
        return ToTMachine(**values)
    except (TypeError, ValueError, KeyError) as exc:
        if isinstance(exc, ToTError):
            raise
        raise ToTError(f"cannot restore a ToT machine from this dict: {type(exc).__name__}: {exc}") from exc

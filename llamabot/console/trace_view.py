"""A stored trace as the run page draws it: one tree per execution of the run (run -> decisions -> model calls ->
tool calls, AoT atoms, ANoT phases, ToT nodes), each span with its place on the execution's timeline.

Pure data: the page's template renders it; nothing here escapes or formats HTML.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from llamabot.console.reader import StoredSpan
from llamabot.durable.drain import RunParked

#: How a span cut by a stopping process begins its error.
PARKED = f"{RunParked.__name__}:"


@dataclass(slots=True)
class SpanNode:
    """One span in the tree. ``left``/``width``: its bar on the timeline, in percent of the execution."""

    span: StoredSpan
    children: list[SpanNode] = field(default_factory=list)
    left: float = 0.0
    width: float = 0.0
    has_error: bool = False  # the span or one below it failed

    @property
    def parked(self) -> bool:
        """The span ended because its process stopped (``RunParked``): not a failure; the run stays PENDING and
        goes on in another execution."""
        return (self.span.error or "").startswith(PARKED)

    @property
    def failed(self) -> bool:
        return bool(self.span.error) and not self.parked

    @property
    def open(self) -> bool:
        """Whether the span has not ended (in flight, or waiting for an approval)."""
        return self.span.end_ms is None

    @property
    def duration_ms(self) -> float | None:
        s = self.span
        return None if s.end_ms is None else s.end_ms - s.start_ms

    @property
    def tokens(self) -> tuple[int, int] | None:
        a = self.span.attributes
        if "prompt_tokens" in a or "completion_tokens" in a:
            return int(a.get("prompt_tokens") or 0), int(a.get("completion_tokens") or 0)
        return None

    @property
    def brief(self) -> str:
        """A one-line summary: a tool call's arguments and result, a model call's choice, a node's action."""
        a, s = self.span.attributes, self.span
        if s.category == "tool_call":
            text = _short(a.get("arguments"))
            return f"{text} = {_short(a['result'])}" if "result" in a else text
        if s.category == "model_call":
            reply = a.get("reply") if isinstance(a.get("reply"), dict) else {}
            calls = ", ".join(str(c.get("name")) for c in reply.get("tool_calls") or () if isinstance(c, dict))
            return calls or _short(reply.get("content")) if reply else str(a.get("model") or "")
        if s.category == "run":
            return _short(a.get("query")) if "query" in a else ""
        return _short(a.get("action")) if a.get("action") is not None else ""


@dataclass(slots=True)
class Execution:
    """The trace of one execution of the run: its root spans, when it ran, how many spans it has."""

    trace_id: str
    roots: list[SpanNode]
    start_ms: float
    end_ms: float | None
    count: int
    hidden: int = 0  # spans left out of the tree (beyond the limit)
    hidden_errors: int = 0  # of which failed


def executions(spans: list[StoredSpan], now_ms: float, limit: int | None = None) -> list[Execution]:
    """The trees of ``spans`` (as :meth:`RunsReader.spans` returns them), one per trace; spans still open are
    drawn up to ``now_ms``. ``limit``: at most this many spans per tree, the first in tree order (the page draws
    the rest on request: a browser lays out a few hundred rows in a blink, thousands in a second)."""
    by_trace: dict[str, list[StoredSpan]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    found = []
    for trace_id, members in by_trace.items():
        nodes = {s.span_id: SpanNode(s) for s in members}
        roots = []
        for node in nodes.values():
            parent = nodes.get(node.span.parent_id) if node.span.parent_id is not None else None
            (parent.children if parent is not None else roots).append(node)
        start = min(s.start_ms for s in members)
        ends = [s.end_ms for s in members]
        end = None if any(e is None for e in ends) else max(e for e in ends if e is not None)
        total = max((end if end is not None else now_ms) - start, 1e-6)
        for node in nodes.values():
            s = node.span
            node.left = 100 * (s.start_ms - start) / total
            node.width = max(100 * ((s.end_ms if s.end_ms is not None else now_ms) - s.start_ms) / total, 0.2)
        for span in reversed(members):  # a child starts after its parent: its error reaches the parent first
            node = nodes[span.span_id]
            node.has_error = node.has_error or node.failed
            parent = nodes.get(node.span.parent_id) if node.span.parent_id is not None else None
            if parent is not None and node.has_error:
                parent.has_error = True
        execution = Execution(trace_id, roots, start, end, len(members))
        if limit is not None and len(members) > limit:
            _prune(execution, limit, latest=end is None)
        found.append(execution)
    return found


def _prune(execution: Execution, limit: int, latest: bool) -> None:
    """Keep the first ``limit`` spans of the tree in pre-order (``latest``: the last ones, for a run in flight);
    count what is left out."""
    kept = 0

    def keep(nodes: list[SpanNode]) -> list[SpanNode]:
        nonlocal kept
        shown: list[SpanNode] = []
        for node in reversed(nodes) if latest else nodes:
            if kept >= limit:
                execution.hidden += _size(node)
                execution.hidden_errors += _errors(node)
                continue
            kept += 1
            node.children = keep(node.children)
            shown.append(node)
        return shown[::-1] if latest else shown

    execution.roots = keep(execution.roots)


def _size(node: SpanNode) -> int:
    return 1 + sum(_size(c) for c in node.children)


def _errors(node: SpanNode) -> int:
    return node.failed + sum(_errors(c) for c in node.children)


def _short(value: Any, limit: int = 120) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""Tracing: every run has a ``trace_id`` and a tree of spans, kept in memory with the run.

Spans are plain objects appended to a list; nothing is written to disk or sent anywhere on the hot path.
Export (``Trace.to_json``) is explicit. The active trace and span travel in a :mod:`contextvars` variable,
so concurrent async runs never see each other's spans.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class Span:
    """One timed step of a run (``kind``: run, decision, model_call, tool_call, ...)."""

    span_id: int
    parent_id: int | None
    name: str
    kind: str
    start: float
    end: float | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def duration_s(self) -> float | None:
        return None if self.end is None else self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        attributes = self.attributes
        reply = attributes.get("reply")
        if self.kind == "model_call" and reply is not None and hasattr(reply, "usage"):
            usage = reply.usage
            attributes = {
                **attributes,
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "cost": usage.cost,
            }
        return {
            "span_id": self.span_id,
            "parent_id": self.parent_id,
            "name": self.name,
            "kind": self.kind,
            "start": self.start,
            "end": self.end,
            "duration_s": self.duration_s,
            "attributes": _jsonable(attributes),
            "error": self.error,
        }


@dataclass(slots=True)
class Trace:
    """The spans of one run, in start order."""

    trace_id: str = field(default_factory=lambda: os.urandom(16).hex())
    spans: list[Span] = field(default_factory=list)

    def open(self, name: str, kind: str, parent: Span | None, **attributes: Any) -> Span:
        span = Span(len(self.spans), parent.span_id if parent else None, name, kind, time.perf_counter(), None, attributes)
        self.spans.append(span)
        return span

    def of_kind(self, kind: str) -> list[Span]:
        return [s for s in self.spans if s.kind == kind]

    def model_replies(self) -> list[dict[str, Any]]:
        """The recorded model replies, in call order (what the scripted model replays)."""
        return [
            _jsonable(s.attributes["reply"]) for s in self.spans if s.kind == "model_call" and "reply" in s.attributes
        ]

    def to_dict(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "spans": [s.to_dict() for s in self.spans]}

    def to_json(self, path: str | Path | None = None, indent: int | None = 2) -> str:
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        spans = [
            Span(
                s["span_id"], s["parent_id"], s["name"], s["kind"], s["start"], s.get("end"),
                dict(s.get("attributes") or {}), s.get("error"),
            )
            for s in data.get("spans", [])
        ]
        return cls(trace_id=data.get("trace_id") or uuid.uuid4().hex, spans=spans)

    @classmethod
    def load(cls, source: str | Path | dict[str, Any]) -> Trace:
        """Load a trace from a dict, a JSON string or a path to a JSON file."""
        if isinstance(source, dict):
            return cls.from_dict(source)
        text = str(source)
        if not text.lstrip().startswith("{"):
            text = Path(source).read_text()
        return cls.from_dict(json.loads(text))


_ACTIVE: ContextVar[tuple[Trace, Span | None] | None] = ContextVar("llamabot_trace", default=None)


def current_trace() -> Trace | None:
    active = _ACTIVE.get()
    return active[0] if active else None


@contextmanager
def capture(trace: Trace | None = None) -> Iterator[Trace]:
    """Record every span started inside the block into ``trace`` (a new one by default)."""
    trace = trace or Trace()
    token = _ACTIVE.set((trace, None))
    try:
        yield trace
    finally:
        _ACTIVE.reset(token)


class span:  # noqa: N801 - used like a function: `with span("decision", "decision") as s:`
    """Open a child span of the active span; yields ``None`` (and records nothing) when no trace is active.

    A class rather than a generator-based context manager: it sits on the agent's hot path.
    """

    __slots__ = ("name", "kind", "attributes", "current", "token")

    def __init__(self, name: str, kind: str, **attributes: Any):
        self.name, self.kind, self.attributes = name, kind, attributes
        self.current: Span | None = None

    def __enter__(self) -> Span | None:
        active = _ACTIVE.get()
        if active is None:
            return None
        trace, parent = active
        self.current = trace.open(self.name, self.kind, parent, **self.attributes)
        self.token = _ACTIVE.set((trace, self.current))
        return self.current

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        current = self.current
        if current is None:
            return
        if exc is not None:
            current.error = f"{type(exc).__name__}: {exc}"
        current.end = time.perf_counter()
        _ACTIVE.reset(self.token)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return _jsonable(to_dict())
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return _jsonable(model_dump(mode="json"))
    return repr(value)


class run:  # noqa: N801 - used like a function: `with run("AgentBot") as trace:`
    """Open a ``run`` span: a child of the active span, or the root of a new trace when none is active.

    Yields the trace. A class rather than a generator-based context manager: it runs once per agent run.
    """

    __slots__ = ("name", "attributes", "current", "token")

    def __init__(self, name: str, **attributes: Any):
        self.name, self.attributes = name, attributes

    def __enter__(self) -> Trace:
        active = _ACTIVE.get()
        trace, parent = active if active is not None else (Trace(), None)
        self.current = trace.open(self.name, "run", parent, **self.attributes)
        self.token = _ACTIVE.set((trace, self.current))
        return trace

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            self.current.error = f"{type(exc).__name__}: {exc}"
        self.current.end = time.perf_counter()
        _ACTIVE.reset(self.token)

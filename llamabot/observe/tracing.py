"""Tracing: every run has a ``trace_id`` and a tree of spans, kept in memory with the run.

Spans are plain objects appended to a list; nothing is written to disk or sent anywhere on the hot path.
Export (``Trace.to_json``) is explicit. The active run and span travel in a :mod:`contextvars` variable, so
concurrent async runs never see each other's spans. Every span start and end is also told to the run's
lifecycle hooks (:class:`llamabot.observe.hooks.RunHooks`): the trace is the record every run keeps, the hooks
are how anything else (events, live views, logs, checkpoints, export) observes a run.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger

from llamabot.observe.hooks import RunHooks, hook_tuple
from llamabot.observe.usage import RunUsage, UsageLimits


@dataclass(slots=True)
class Span:
    """One timed step of a run. ``category``: ``run``, ``node``, ``model_call`` or ``tool_call`` (what the hooks
    dispatch on); ``kind`` says more (``decision``, ``atom``, ``tot_step``, ``phase``...). Attributes whose name
    starts with ``_`` are live values for hooks and are left out of exports."""

    span_id: int
    parent_id: int | None
    name: str
    kind: str
    start: float
    end: float | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    category: str = "node"
    trace_id: str = ""

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
                "latency_s": self.duration_s,  # the call's own time: the span's (kept once, not as an attribute)
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
            "attributes": _jsonable({k: v for k, v in attributes.items() if not k.startswith("_")}),
            "error": self.error,
            "category": self.category,
        }


#: Trace ids are 128 random bits from a generator of llamabot's own, seeded by the OS: a third of the cost of the
#: system call of ``os.urandom`` (made for every run). Its own, so a program's ``random.seed`` never fixes them;
#: re-seeded in forked children, so workers forked from one process never repeat each other's ids.
_TRACE_IDS = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_TRACE_IDS.seed)


def new_trace_id() -> str:
    """A new trace id: 32 hexadecimal digits, random."""
    return _TRACE_IDS.getrandbits(128).to_bytes(16, "big").hex()


#: A span's id is its index in ``Trace.spans``. A run may open spans from several threads at once (ANoT's sync
#: phase 3 runs a layer's steps in threads; a bot called inside a sync tool of an async run records into the same
#: trace from a worker thread), so the index is read after the append, which is atomic: no lock (taking one cost
#: a tenth of what opening a span costs, on every span).
def _appended(spans: list[Span], span: Span) -> int:
    """Append ``span`` to ``spans``; its index there."""
    spans.append(span)
    index = len(spans) - 1
    return index if spans[index] is span else _index_of(spans, span)


def _index_of(spans: list[Span], span: Span) -> int:
    """Where ``span`` is in ``spans``, searched from the end: another thread appended after it (by identity: two
    spans may be equal)."""
    for index in range(len(spans) - 1, -1, -1):
        if spans[index] is span:
            return index
    raise RuntimeError("a span vanished from its trace while it was being opened")  # spans are only appended


_clock = time.perf_counter  # spans' clock


@dataclass(slots=True, init=False)
class Trace:
    """The spans of one run, in start order, and what its model calls spent (``usage``, kept live)."""

    trace_id: str
    spans: list[Span]
    usage: RunUsage

    def __init__(self, trace_id: str | None = None, spans: list[Span] | None = None, usage: RunUsage | None = None):
        self.trace_id = trace_id or new_trace_id()
        self.spans = [] if spans is None else spans
        self.usage = RunUsage() if usage is None else usage

    def open(self, name: str, kind: str, parent: Span | None, category: str = "node", **attributes: Any) -> Span:
        """Record a new span (started now). Prefer :func:`open_span`, which also tells the run's hooks."""
        span = Span(-1, parent.span_id if parent else None, name, kind, time.perf_counter(), None, attributes, None,
                    category, self.trace_id)
        span.span_id = _appended(self.spans, span)
        return span

    def of_kind(self, kind: str) -> list[Span]:
        return [s for s in self.spans if s.kind == kind]

    def model_replies(self) -> list[dict[str, Any]]:
        """The recorded model replies, in call order (what the scripted model replays)."""
        return [
            _jsonable(s.attributes["reply"]) for s in self.spans if s.kind == "model_call" and "reply" in s.attributes
        ]

    def to_dict(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "usage": self.usage.to_dict(), "spans": [s.to_dict() for s in self.spans]}

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
                dict(s.get("attributes") or {}), s.get("error"), s.get("category", "node"),
            )
            for s in data.get("spans", [])
        ]
        usage = RunUsage.from_dict(data["usage"]) if isinstance(data.get("usage"), dict) else RunUsage()
        return cls(trace_id=data.get("trace_id") or None, spans=spans, usage=usage)

    @classmethod
    def load(cls, source: str | Path | dict[str, Any]) -> Trace:
        """Load a trace from a dict, a JSON string or a path to a JSON file."""
        if isinstance(source, dict):
            return cls.from_dict(source)
        text = str(source)
        if not text.lstrip().startswith("{"):
            text = Path(source).read_text()
        return cls.from_dict(json.loads(text))


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



@dataclass(slots=True, init=False)
class LiveRun:
    """The live side of a run, beside its serialisable state: the trace it records into, its hooks, and live
    values (``values``: e.g. the caller's ``globals_dict``) that must never be saved with the state."""

    trace: Trace
    hooks: tuple[RunHooks, ...]
    values: dict[str, Any]
    log: bool  # the library's debug log is on for this run (decided once, at its start)
    tokens: bool  # some hook listens to token deltas
    limits: UsageLimits | None  # checked by the model seam before each request (shared with nested runs)

    def __init__(self, trace: Trace, hooks: tuple[RunHooks, ...] = (), values: dict[str, Any] | None = None,
                 log: bool = True, tokens: bool = False, limits: UsageLimits | None = None):
        self.trace, self.hooks, self.values = trace, hooks, {} if values is None else values
        self.log, self.tokens, self.limits = log, tokens, limits


_CURRENT: ContextVar[tuple[LiveRun, Span | None] | None] = ContextVar("llamabot_run", default=None)


#: ``active_run()``: ``(run context, active span)`` of the innermost active run, or ``None`` outside any run. The
#: context variable's own ``get`` (no Python call): for the hot paths that need the run and its span together.
active_run: Callable[[], tuple[LiveRun, Span | None] | None] = _CURRENT.get


def current_run() -> LiveRun | None:
    """The innermost active run's context, or ``None`` outside any run."""
    active = _CURRENT.get()
    return active[0] if active else None


def current_trace() -> Trace | None:
    """The active trace, or ``None`` outside any run."""
    active = _CURRENT.get()
    return active[0].trace if active else None


def current_span() -> Span | None:
    """The active span (the parent of the next one), or ``None``."""
    active = _CURRENT.get()
    return active[1] if active else None


OpenSpan = tuple[Span, Any, LiveRun]


def open_span(name: str, kind: str, category: str = "node", state: Any = None, **attributes: Any) -> OpenSpan | None:
    """Start a child of the active span, tell the hooks, and make it the active span; ``None`` outside a run.

    Close it with :func:`close_span` (in the same task or thread). The low-level form of :class:`span`, for
    the hot paths that cannot use a ``with`` block (a node's span opens after ``prep`` and closes after ``post``).
    """
    return start_span(name, kind, category, state, attributes)


def start_span(name: str, kind: str, category: str, state: Any, attributes: dict[str, Any],
               passive: bool = False) -> OpenSpan | None:
    """:func:`open_span` with the attributes given as a dict, which becomes the span's own (no copy): for
    callers that already hold one (a node's ``span_attributes``). ``passive``: the span is made the active span only
    when the run's hooks listen to token deltas (which name the active span); otherwise spans opened while it is
    open are its siblings (a model call: nothing nests in one, and making a span active costs a quarter of
    opening it)."""
    active = _CURRENT.get()
    if active is None:
        return None
    context, parent = active
    trace = context.trace
    spans = trace.spans
    current = Span(-1, parent.span_id if parent is not None else None, name, kind, _clock(), None, attributes, None,
                   category, trace.trace_id)
    current.span_id = _appended(spans, current)
    token = _CURRENT.set((context, current)) if not passive or context.tokens else None
    if context.hooks:
        for hook in context.hooks:
            hook.on_start(current, state)
    return current, token, context


def close_span(opened: OpenSpan | None, state: Any = None, error: BaseException | str | None = None) -> None:
    """End a span from :func:`open_span`: record ``error`` (an exception or its text), tell the hooks, and make
    its parent active again."""
    if opened is None:
        return
    current, token, context = opened
    current.end = _clock()
    if error is not None:
        current.error = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    if token is not None:
        _CURRENT.reset(token)
    if context.hooks:
        for hook in context.hooks:
            hook.on_end(current, state)


@contextmanager
def under(parent: Span | None) -> Iterator[None]:
    """Within the block, ``parent`` (a span of the active run) is the active span: what a task started by one
    step uses to record its own spans beside that step's rather than inside it. A no-op outside a run."""
    active = _CURRENT.get()
    if active is None:
        yield
        return
    token = _CURRENT.set((active[0], parent))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def emit_token(delta: str) -> None:
    """Tell the active run's hooks about a piece of streamed model output (a no-op outside a run)."""
    _tell("on_token", delta)


def emit_tool_call_delta(delta: Any) -> None:
    """Tell the active run's hooks about a piece of a tool call being streamed (a no-op outside a run)."""
    _tell("on_tool_call_delta", delta)


def _tell(method: str, piece: Any) -> None:
    active = _CURRENT.get()
    if active is not None:
        context, current = active
        for hook in context.hooks:
            getattr(hook, method)(current, piece)


def _listens_to_tokens(hooks: tuple[RunHooks, ...]) -> bool:
    """Whether a hook overrides ``on_token`` or ``on_tool_call_delta`` (then models stream)."""
    return bool(hooks) and any(_overrides(h, "on_token") or _overrides(h, "on_tool_call_delta") for h in hooks)


def _overrides(hook: RunHooks, name: str) -> bool:
    return getattr(type(hook), name) is not getattr(RunHooks, name) or name in getattr(hook, "__dict__", ())


def _log_start(name: str, trace_id: str) -> bool:
    """Log the start of a run at debug level; whether the library's log is on (loguru evaluates lazy arguments
    only for a record it emits), so the steps of the run skip their log calls when it is off."""
    emitted: list[bool] = []
    _LAZY.debug("run {} started (trace {})", lambda: emitted.append(True) or name, lambda: trace_id)
    return bool(emitted)


_LAZY = logger.opt(lazy=True)  # made once: ``opt`` builds a new logger object on every call


def log_debug(message: str, *args: Any) -> None:
    """Log a debug line of the library for its caller, unless the active run started with the log off (cheap:
    one context-variable read when off)."""
    active = _CURRENT.get()
    if active is None or active[0].log:
        logger.opt(depth=1).debug(message, *args)


@contextmanager
def capture(trace: Trace | None = None, hooks: Iterable[RunHooks] = ()) -> Iterator[Trace]:
    """Record every span started inside the block into ``trace`` (a new one by default), telling ``hooks``."""
    trace = trace or Trace()
    hooks = tuple(hooks)
    token = _CURRENT.set((LiveRun(trace, hooks, tokens=_listens_to_tokens(hooks)), None))
    try:
        yield trace
    finally:
        _CURRENT.reset(token)


class span:  # noqa: N801 - used like a function: `with span("decision", "decision") as s:`
    """Open a child span of the active span; yields ``None`` (and records nothing) when no run is active."""

    __slots__ = ("name", "kind", "category", "attributes", "opened")

    def __init__(self, name: str, kind: str, category: str = "node", **attributes: Any):
        self.name, self.kind, self.category, self.attributes = name, kind, category, attributes

    def __enter__(self) -> Span | None:
        self.opened = open_span(self.name, self.kind, self.category, None, **self.attributes)
        return None if self.opened is None else self.opened[0]

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        close_span(self.opened, None, exc)


# The one process-wide switch: hooks every ROOT run adds before its own (``llamabot.observe.otel.instrument``
# installs its exporter here). A tuple, replaced whole by ``set_process_hooks`` and read once per root run, so a
# run never sees half an update and an empty tuple costs one global read.
_PROCESS_HOOKS: tuple[RunHooks, ...] = ()


def process_hooks() -> tuple[RunHooks, ...]:
    """The hooks every root run of this process adds before its own (empty unless something installed some)."""
    return _PROCESS_HOOKS


def set_process_hooks(hooks: Iterable[RunHooks]) -> tuple[RunHooks, ...]:
    """Replace the process-wide hooks (runs already started keep theirs); returns the previous ones."""
    global _PROCESS_HOOKS
    previous, _PROCESS_HOOKS = _PROCESS_HOOKS, hook_tuple(hooks, "set_process_hooks")
    return previous


def _for_run(hooks: Iterable[RunHooks]) -> tuple[RunHooks, ...]:
    """The hooks one run uses: each hook's :meth:`~llamabot.observe.hooks.RunHooks.for_run` (per-run state)."""
    return tuple(hook.for_run() for hook in hooks)


class run:  # noqa: N801 - used like a function: `with run("AgentBot") as trace:`
    """Open a ``run`` span: a child of the active span (sharing its trace and hooks, plus ``hooks``), or the
    root of a new trace when none is active, with the process-wide hooks (:func:`set_process_hooks`) first.
    ``values`` are the run's live values (see :class:`LiveRun`).

    Yields the trace; ``self.span`` is the run span (set ``span.attributes["result"]`` before the block ends so
    hooks see the result).
    """

    __slots__ = ("name", "hooks", "values", "trace", "attributes", "span", "token", "context", "limits", "spent")

    def __init__(self, name: str, *, hooks: Iterable[RunHooks] = (), values: dict[str, Any] | None = None,
                 trace: Trace | None = None, limits: UsageLimits | None = None, **attributes: Any):
        self.name, self.hooks, self.values, self.trace, self.attributes = name, hooks, values, trace, attributes
        self.limits = limits

    def __enter__(self) -> Trace:
        active = _CURRENT.get()
        limits = self.limits
        if active is not None:
            outer, parent = active
            hooks = (*outer.hooks, *_for_run(self.hooks)) if self.hooks else outer.hooks
            trace = outer.trace
            if limits is None:
                limits = outer.limits
        else:
            everywhere = _PROCESS_HOOKS
            hooks = _for_run((*everywhere, *self.hooks) if everywhere else self.hooks)
            parent, trace = None, self.trace or Trace()
        self.context = LiveRun(trace, hooks, self.values, _log_start(self.name, trace.trace_id),
                                  _listens_to_tokens(hooks), limits)
        # what the trace had spent before this run (nested runs and a given trace share it); nothing for a new one
        self.spent = trace.usage.copy() if trace.usage.requests else None
        self.span = trace.open(self.name, "run", parent, "run", **self.attributes)
        self.token = _CURRENT.set((self.context, self.span))
        for hook in hooks:
            hook.on_start(self.span, None)
        return trace

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            self.span.error = f"{type(exc).__name__}: {exc}"
        usage = self.context.trace.usage  # this run's own share of it:
        self.span.attributes["usage"] = usage - self.spent if self.spent is not None else usage.copy()
        self.span.end = time.perf_counter()
        _CURRENT.reset(self.token)
        for hook in self.context.hooks:
            hook.on_end(self.span, None)

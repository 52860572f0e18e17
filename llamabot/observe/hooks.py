"""The lifecycle-hook interface: one way to observe a run.

Every run is a tree of spans (see :mod:`llamabot.observe.tracing`), and every span belongs to one of four
categories: ``run``, ``node`` (a graph node step: a decision, a plan, a phase, a ToT step...), ``model_call``
and ``tool_call``. A hook is told when each starts and ends, and receives the text deltas of streamed model
output (and the pieces of tool calls being written). The trace, ``astream`` events, the CLI's live views, ANoT's debug lines and ToT's step callbacks are all
hooks; checkpoints and OpenTelemetry export are meant to be hooks too.

Hooks run synchronously in the run's own task or thread, so they must be quick (queue work elsewhere if it is
slow). A hook that raises fails the run: hooks are part of the program, not best-effort listeners.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llamabot.observe.tracing import Span

#: The span categories a hook is told about.
CATEGORIES = ("run", "node", "model_call", "tool_call")


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call as a streaming model writes it.

    ``index``: which call of the reply (0 for the first); ``name``: the tool, when this piece names it (providers
    send it with the first piece of a call only); ``text``: the next characters of the call's arguments (JSON
    text). ``document=True``: ``text`` continues the whole call written as one JSON document,
    ``{"name": ..., "arguments": {...}}`` (how the embedded model writes a call), not its arguments alone.
    """

    index: int
    name: str | None
    text: str
    document: bool = False


class RunHooks:
    """Base class of lifecycle hooks; override what you need (every method does nothing by default).

    ``on_start``/``on_end`` receive every span and dispatch to the typed methods by ``span.category``; override
    them to see everything in one place. ``state`` is the run's state (the graph's shared data) for ``node``
    spans, and ``None`` for the others. ``span.attributes`` carry what the step recorded: a decision's
    ``calls``/``errors``/``iteration``, a tool call's ``arguments`` and ``result``, a model call's ``request``
    and ``reply``, a run's ``result``; ``span.error`` is set when the step failed.
    """

    #: Whether the hook needs a run's steps one at a time (a checkpoint of each boundary): runs with such a hook
    #: never start tool calls early (see ``agents/parallel_calls``).
    sequential: bool = False

    def for_run(self) -> RunHooks:
        """The hook a run uses (called once when an outermost run starts). A hook that keeps state about the run
        (counters, a nesting depth) returns a fresh copy, so a hook registered on a bot serves any number of
        concurrent runs; a stateless hook, or one that deliberately collects across runs, returns itself (the
        default)."""
        return self

    def on_start(self, span: Span, state: Any) -> None:
        getattr(self, _START[span.category])(span, state)

    def on_end(self, span: Span, state: Any) -> None:
        getattr(self, _END[span.category])(span, state)

    def on_token(self, span: Span, delta: str) -> None:
        """A piece of streamed model output text (``span`` is the model call)."""

    def on_tool_call_delta(self, span: Span, delta: ToolCallDelta) -> None:
        """A piece of a tool call a streaming model is writing (``span`` is the model call)."""

    def on_run_start(self, span: Span, state: Any) -> None:
        """A run started (a bot was called, or a run nested in a tool)."""

    def on_run_end(self, span: Span, state: Any) -> None:
        """A run ended; ``span.attributes["result"]`` holds the result, ``span.error`` the failure."""

    def on_node_start(self, span: Span, state: Any) -> None:
        """A graph node starts its work (after its ``prep``)."""

    def on_node_end(self, span: Span, state: Any) -> None:
        """A graph node finished (after its ``post``); ``span.attributes["action"]`` is the edge it chose."""

    def on_model_call_start(self, span: Span, state: Any) -> None:
        """A model request is about to be sent (``span.attributes["request"]``)."""

    def on_model_call_end(self, span: Span, state: Any) -> None:
        """A model reply arrived (``span.attributes["reply"]``) or the call failed."""

    def on_tool_call_start(self, span: Span, state: Any) -> None:
        """A tool is about to run (``span.attributes["arguments"]``)."""

    def on_tool_call_end(self, span: Span, state: Any) -> None:
        """A tool finished (``span.attributes["result"]``) or failed (``span.error``)."""


#: What a hook is called with: an object with these methods is a hook (``RunHooks`` has them all).
HOOK_METHODS = ("for_run", "on_start", "on_end", "on_token", "on_tool_call_delta")


def hook_tuple(hooks: Iterable[RunHooks], where: str) -> tuple[RunHooks, ...]:
    """``hooks`` as a tuple, each checked to be a hook (a :class:`RunHooks`, or an object with its methods):
    otherwise a ``TypeError`` naming ``where``, the position and what is missing, when the bot is made rather
    than in the middle of its first run."""
    one = not _missing(hooks)
    if one or not isinstance(hooks, Iterable) or isinstance(hooks, (str, bytes, dict)):
        raise TypeError(f"{where}: hooks= takes a list of hooks, got {type(hooks).__name__}"
                        + (" (one hook: write hooks=[hook])" if one else ""))
    items = tuple(hooks)
    for i, hook in enumerate(items):
        missing = _missing(hook)
        if missing:
            raise TypeError(f"{where}: hooks[{i}] ({type(hook).__name__}) is not a hook (no {', '.join(missing)}): "
                            "subclass llamabot.RunHooks, or use CallbackHook(on_end=...)")
    return items


def _missing(obj: Any) -> tuple[str, ...]:
    if isinstance(obj, RunHooks):
        return ()
    return tuple(name for name in HOOK_METHODS if not callable(getattr(obj, name, None)))


_START = {c: f"on_{c}_start" for c in CATEGORIES}
_END = {c: f"on_{c}_end" for c in CATEGORIES}


class CallbackHook(RunHooks):
    """A hook from plain callables: ``CallbackHook(on_end=lambda span, state: ...)``."""

    def __init__(self, on_start: Any = None, on_end: Any = None, on_token: Any = None,
                 on_tool_call_delta: Any = None):
        if on_tool_call_delta is not None:
            self.on_tool_call_delta = on_tool_call_delta  # type: ignore[method-assign]
        if on_start is not None:
            self.on_start = on_start  # type: ignore[method-assign]
        if on_end is not None:
            self.on_end = on_end  # type: ignore[method-assign]
        if on_token is not None:
            self.on_token = on_token  # type: ignore[method-assign]

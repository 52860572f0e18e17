"""Debug output in the seed's format, as loguru records: ``[HH:MM:SS.mmm] [P1:R00] Planning for: ...``.

| level | name | shows |
|---|---|---|
| 0 | OFF | nothing (the CLI shows its results table only) |
| 1 | SUMMARY | one line per request: start, final ranking, totals; phase failures |
| 2 | VERBOSE | phases, the strategy, the LWT steps, each tool call, each step's output |
| 3 | FULL | every model prompt and response in full |

The lines are derived from the run's lifecycle hooks (:class:`DebugHook`: node, phase, model-call and tool-call
starts and ends; nothing in the nodes logs) and written as loguru records of the ``llamabot`` logger, from this
module, at loguru level ``TRACE`` with ``extra`` ``anot_phase``, ``anot_request``, ``anot_level`` (1-3) and
``anot_run`` (the run's trace id). :func:`anot_format` is the loguru format of the seed's line layout and
:func:`anot_filter` selects the lines of one level, so the levels are a loguru sink::

    logger.enable("llamabot")
    logger.add(sys.stderr, **anot_sink_options(2))      # level="TRACE", format=anot_format, filter=level <= 2

``TRACE`` keeps the lines away from loguru's default ``DEBUG`` handler: a user who enables the library's log
does not see them twice, and a bot's own debug output never reaches that handler.

**An explicit level** (``debug=`` on the bot, ``$ANOT_DEBUG``, the CLI's ``--debug``) shows the lines although
the library keeps ``logger.disable("llamabot")``: for the run's duration the hook adds its own sink (the
``DebugLog``'s ``sink``, default stderr; each line passed separately, without the newline) filtered to that
run's records at that level, and enables this module only (``llamabot.reasoning.anot.debug``, reference
counted over concurrent runs; disabled again after the last one when it was disabled before). Nothing else of
the library's log is enabled, and no other sink receives the lines unless it accepts ``TRACE`` records.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from loguru import logger

from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import current_run, current_trace
from llamabot.reasoning.anot.stats import PHASE_KIND, model_calls_in, total
from llamabot.settings import setting

if TYPE_CHECKING:
    from llamabot.observe.tracing import Span

OFF, SUMMARY, VERBOSE, FULL = 0, 1, 2, 3
ENV_VAR = "ANOT_DEBUG"
#: The module the records come from (what an explicit level enables for a run).
LOGGER_NAME = __name__
#: The run value (``current_run().values``) naming the request tag of an ANoT run's lines.
TAG_KEY = "anot_tag"
_RUN_KEY = "_anot_debug"  # the hook's live record of a run: in the run values and on the run span


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def level_from_env(default: int = OFF) -> int:
    """``$ANOT_DEBUG`` as a level 0-3, else ``default`` when unset (another value raises
    :class:`~llamabot.errors.SettingsError`, a ``ValueError``, naming it)."""
    return setting(ENV_VAR) if os.environ.get(ENV_VAR, "").strip() else default


def format_line(phase: str, request: str, message: str, now: datetime | None = None) -> str:
    """One line: ``[HH:MM:SS.mmm] [P1:R00] message`` (what :func:`anot_format` writes for a record)."""
    stamp = (now or datetime.now()).strftime("%H:%M:%S.%f")[:-3]
    return f"[{stamp}] [{phase}:{request}] {message}"


# -- the loguru side: records, format, filter ----------------------------------------------------------------


def anot_format(record: dict[str, Any]) -> str:
    """The loguru format function of the seed's layout (other records: time, level, name and message)."""
    if "anot_phase" in record["extra"]:
        return "[{time:HH:mm:ss.SSS}] [{extra[anot_phase]}:{extra[anot_request]}] {message}\n"
    return "[{time:HH:mm:ss.SSS}] {level} {name}: {message}\n{exception}"


def anot_filter(level: int = FULL, run: str | None = None) -> Callable[[dict[str, Any]], bool]:
    """A loguru filter: ANoT records of level 1..``level`` (of the run with trace id ``run``, if given)."""

    def accept(record: dict[str, Any]) -> bool:
        extra = record["extra"]
        return 0 < extra.get("anot_level", 0) <= level and (run is None or extra.get("anot_run") == run)

    return accept


def anot_sink_options(level: int = FULL) -> dict[str, Any]:
    """``logger.add(sink, **anot_sink_options(2))``: a sink showing ANoT's lines up to ``level``."""
    return {"level": "TRACE", "format": anot_format, "filter": anot_filter(level)}


def emit(level: int, phase: str, request: str, message: Any, run: str = "") -> None:
    """Write one ANoT line (continuation lines indented) as a loguru record of this module."""
    lines = str(message).splitlines() or [""]
    text = "\n".join([lines[0], *("    " + line for line in lines[1:])])
    logger.bind(anot_phase=phase, anot_request=request, anot_level=level, anot_run=run).log("TRACE", text)


def _module_enabled() -> bool:
    """Whether records of this module pass loguru's activation (``logger.enable``/``disable``) now. The probe
    record has level number 1, below ``TRACE``: only a sink added with ``level=0`` (this probe's own) sees it."""
    hits: list[bool] = []
    probe = object()

    def seen(record: dict[str, Any]) -> bool:
        if record["extra"].get("anot_probe") is probe:
            hits.append(True)
        return False

    sink = logger.add(lambda _: None, level=0, filter=seen)
    try:
        logger.bind(anot_probe=probe).log(1, "anot debug probe")
    finally:
        logger.remove(sink)
    return bool(hits)


_lock = threading.Lock()
_users = 0
_enabled_here = False


def _acquire() -> None:
    global _users, _enabled_here
    with _lock:
        if _users == 0:
            _enabled_here = not _module_enabled()
            if _enabled_here:
                logger.enable(LOGGER_NAME)
        _users += 1


def _release() -> None:
    global _users, _enabled_here
    with _lock:
        _users -= 1
        if _users == 0 and _enabled_here:
            logger.disable(LOGGER_NAME)
            _enabled_here = False


@dataclass
class _Session:
    run: str
    on: bool  # lines are written (an explicit level, or the user enabled this module)
    sink_id: int | None = None


_SESSION: ContextVar[_Session | None] = ContextVar("anot_debug_session", default=None)


@dataclass
class DebugLog:
    """An ANoT debug level (0-3) and where an explicit level writes its lines (``sink``, default stderr:
    called once per line, without the newline). Configuration only: a bot holds one; runs open sessions."""

    level: int = OFF
    sink: Callable[[str], None] = field(default=_stderr, repr=False)

    @classmethod
    def resolve(cls, debug: int | DebugLog | None, sink: Callable[[str], None] | None = None) -> DebugLog:
        """A log from an explicit level or log, else from ``$ANOT_DEBUG``."""
        if isinstance(debug, DebugLog):
            return debug
        level = level_from_env() if debug is None else min(max(int(debug), OFF), FULL)
        return cls(level, sink or _stderr)

    def enabled(self, level: int) -> bool:
        return self.level >= level

    def _deliver(self, message: Any) -> None:
        for line in str(message).rstrip("\n").split("\n"):
            self.sink(line)

    def open(self, run: str) -> _Session:
        """Start a run's lines: with an explicit level, add this log's sink for the run's records and enable
        this module; else write only if the user enabled it. Close with :meth:`close`."""
        if self.level <= OFF:
            return _Session(run, _module_enabled())
        _acquire()
        sink_id = logger.add(self._deliver, level="TRACE", format=anot_format, filter=anot_filter(self.level, run))
        return _Session(run, True, sink_id)

    def close(self, session: _Session) -> None:
        if session.sink_id is not None:
            logger.remove(session.sink_id)
            session.sink_id = None
            _release()

    @contextmanager
    def session(self, run: str | None = None) -> Iterator[_Session]:
        """:meth:`open` and :meth:`close` around a block; ``log(...)`` inside writes the block's lines."""
        opened = self.open(run or os.urandom(8).hex())
        token = _SESSION.set(opened)
        try:
            yield opened
        finally:
            _SESSION.reset(token)
            self.close(opened)

    def __call__(self, level: int, phase: str, request: str, message: Any) -> None:
        """One line of the current :meth:`session` (nothing outside one)."""
        opened = _SESSION.get()
        if opened is not None and opened.on:
            emit(level, phase, request, message, opened.run)


# -- the lines, derived from the run's lifecycle -------------------------------------------------------------


def _short(text: Any, limit: int = 200) -> str:
    return " ".join(str(text).split())[:limit]


def _arguments(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    return ", ".join(repr(v) for v in arguments.values())


class DebugHook(RunHooks):
    """ANoT's debug lines from the lifecycle of its runs: which node or phase started or ended, what a tool
    call returned, which model calls a phase made (read off the trace at the phase's end). One hook per bot;
    what it keeps per run lives in the run's values (concurrent runs never mix)."""

    def __init__(self, log: DebugLog):
        self.log = log

    # per run ----------------------------------------------------------------------------------------------

    def on_run_start(self, span: Span, state: Any) -> None:
        context = current_run()
        if context is None or TAG_KEY not in context.values or _RUN_KEY in context.values:
            return
        opened = self.log.open(span.trace_id)
        context.values[_RUN_KEY] = opened
        span.attributes["_anot_debug"] = (opened, context.values[TAG_KEY])

    def on_run_end(self, span: Span, state: Any) -> None:
        record = span.attributes.pop("_anot_debug", None)
        if record is None:
            return
        opened, tag = record
        try:
            result = span.attributes.get("result")
            stats = getattr(result, "stats", None)
            if opened.on and stats is not None:
                totals = total(stats)
                emit(SUMMARY, "RUN", tag,
                     f"{len(stats)} phases, {totals.seconds:.1f} s, {totals.calls} LLM calls, "
                     f"{totals.prompt_tokens} prompt + {totals.completion_tokens} completion tokens", opened.run)
        finally:
            self.log.close(opened)

    def _run(self) -> tuple[Callable[..., None], str] | None:
        """``(line, tag)`` for the active ANoT run whose lines are on, else None."""
        context = current_run()
        if context is None:
            return None
        opened = context.values.get(_RUN_KEY)
        if opened is None or not opened.on:
            return None
        run = opened.run

        def line(level: int, phase: str, message: Any) -> None:
            if self.log.level <= OFF or level <= self.log.level:
                emit(level, phase, context.values[TAG_KEY], message, run)

        return line, context.values[TAG_KEY]

    # nodes and phases ---------------------------------------------------------------------------------------

    def on_node_start(self, span: Span, state: Any) -> None:
        active = self._run()
        if active is None or state is None:
            return
        line = active[0]
        if span.name == "strategy":
            query = state["query"]
            line(SUMMARY, "P1", f"Planning for: {query[:80]}{'...' if len(query) > 80 else ''}")
        elif span.name == "layer" and state["layer"] == 0:
            line(VERBOSE, "P3", f"Executing {len(state['steps'])} steps in {len(state['layers'])} layers...")

    def on_node_end(self, span: Span, state: Any) -> None:
        active = self._run()
        if active is None:
            return
        line = active[0]
        if span.kind == PHASE_KIND:
            self._model_calls(line, span)
            return
        if state is None or span.error is not None:
            return
        getattr(self, f"_end_{span.name}", _ignore)(line, span, state)

    def _model_calls(self, line: Callable[..., None], phase: Span) -> None:
        """At level FULL, every prompt and response of the phase's model calls (not P3's: its filled prompts
        are shown per step)."""
        trace = current_trace()
        if trace is None or phase.name == "P3" or (OFF < self.log.level < FULL):
            return
        for call in model_calls_in(trace, phase):
            request, reply = call.attributes.get("request"), call.attributes.get("reply")
            if request is not None:
                for message in request.messages:
                    content = message.get("content") or ""
                    calls = message.get("tool_calls")
                    line(FULL, phase.name, f"prompt {message['role']}: {content}" + (f" {calls}" if calls else ""))
            if reply is not None:
                calls = ", ".join(f"{c.name}({c.arguments})" for c in reply.tool_calls)
                line(FULL, phase.name, f"response: {reply.content or ''}{calls}")

    def _end_strategy(self, line: Callable[..., None], span: Span, state: dict[str, Any]) -> None:
        if state["strategy"] is None:
            error = state["errors"][-1] if state["errors"] else "no strategy"
            line(SUMMARY, "P1", f"No valid strategy ({error}); phase 2 works from the request")
            return
        corrected = span.attributes.get("corrected_total")
        if corrected:
            line(VERBOSE, "P1", f"TOTAL_ITEMS {corrected[0]} corrected to {corrected[1]}")
        merged = span.attributes.get("merged")
        if merged:
            line(VERBOSE, "P1", "Merged repeated conditions: " + ", ".join(f"{a} = {b}" for a, b in merged.items()))
        line(VERBOSE, "P1", state["strategy_text"])

    def _end_lwt(self, line: Callable[..., None], span: Span, state: dict[str, Any]) -> None:
        line(VERBOSE, "P2", f"ReAct expansion: {len(state['script'])} initial steps...")

    def _end_lwt_end(self, line: Callable[..., None], span: Span, state: dict[str, Any]) -> None:
        phase2 = state["phase2"]
        if phase2.get("error") is not None:
            line(SUMMARY, "P2", f"Phase 2 did not finish ({phase2['error']}); running {phase2['fallback']}")
        line(VERBOSE, "P2", f"ReAct done after {phase2.get('iterations', 0)} iterations")
        from llamabot.reasoning.anot.lwt import render_lwt

        line(VERBOSE, "P2", "LWT:\n" + render_lwt(state["steps"]))

    def _end_layer(self, line: Callable[..., None], span: Span, state: dict[str, Any]) -> None:
        index = state["layer"] - 1
        layer = state["layers"][index]
        filled = self._filled_prompts(span) if self.log.level <= OFF or self.log.level >= FULL else {}
        for step in layer:
            if step.id in filled:
                line(FULL, "P3", f"({step.id}) filled: {filled[step.id]}")
            line(VERBOSE, "P3", f"layer {index}: ({step.id}) -> {_short(state['outputs'].get(step.id, ''))}")

    def _filled_prompts(self, node: Span) -> dict[str, str]:
        """Step id -> the prompt its model call was sent (read off the trace below the layer's node span)."""
        trace = current_trace()
        if trace is None:
            return {}
        spans = trace.spans
        filled: dict[str, str] = {}
        for call in spans[node.span_id + 1:]:
            if call.kind != "model_call" or call.parent_id is None:
                continue
            step = spans[call.parent_id]
            if step.kind == "lwt_step" and _inside(step, node, spans):
                request = call.attributes.get("request")
                if request is not None:
                    filled.setdefault(step.name, request.messages[-1].get("content") or "")
        return filled

    def _end_rank(self, line: Callable[..., None], span: Span, state: dict[str, Any]) -> None:
        ranking = state["ranking"]
        if ranking is None:  # the final step's output decides the ranking: it runs now
            line(VERBOSE, "P3", "the final step decides the ranking: running it")
            return
        if state["layer"] < len(state["layers"]):
            line(VERBOSE, "P3", "the final step is not needed: the condition steps rank the items")
        line(SUMMARY, "P3", f"Final ranking: {ranking.best} (top-5 {list(ranking.top(5))}, from {ranking.source})")

    # tool calls (phase 2's tools) ---------------------------------------------------------------------------

    def on_tool_call_end(self, span: Span, state: Any) -> None:
        active = self._run()
        if active is None:
            return
        note = span.attributes.get("lwt_note")
        if span.error is None and note is not None:
            active[0](VERBOSE, "P2", note)
            return
        outcome = f"Error: {span.error}" if span.error is not None else _short(span.attributes.get("result"))
        active[0](VERBOSE, "P2", f"{span.name}({_arguments(span.attributes.get('arguments'))}) -> {outcome}")


def _ignore(*_: Any) -> None:
    return None


def _inside(span: Span, ancestor: Span, spans: list[Span]) -> bool:
    parent = span.parent_id
    while parent is not None:
        if parent == ancestor.span_id:
            return True
        parent = spans[parent].parent_id
    return False

"""What a durable run's page shows, stored beside DBOS's tables: its trace, written while it runs.

DBOS records a run's inputs, steps and result, not its trace (decisions, model calls, tool calls, AoT atoms, ANoT
phases, ToT nodes, with their timings, tokens, arguments, results and errors). The workflow records it with a
:class:`TraceRecorder`, a lifecycle hook that turns each span's start and end into a row; one :class:`TraceWriter`
thread per process writes the rows in batches, every :data:`FLUSH_S` while runs change and when the runtime stops.
The run's task never waits for the database, and a run of 2,000 spans costs a few dozen writes, not 4,000.

Tables (read by :mod:`llamabot.console`):

- ``llamabot_traces``: one row per execution of a run (run id, trace id): bot, model, wall-clock start and end
  (ms), span count, tokens, cost, error, and when it was last written. A run recovered by another process
  executes again with a new trace (its replayed steps open no span), so a run can have several.
- ``llamabot_spans``: one row per span (run id, trace id, span id): parent, name, kind, category, start and end
  (ms), error, and its attributes as JSON (:meth:`Span.to_dict`: a model call's request as a summary, its reply,
  tokens and cost; a tool call's arguments and result; a run's result and usage), cut at :data:`MAX_ATTRIBUTES`.
- ``llamabot_graphs``: each bot factory's graph as mermaid source (written once per factory per process).

A process killed outright loses the rows of its last :data:`FLUSH_S` (the run itself loses nothing).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from loguru import logger
from sqlalchemy.dialects import postgresql, sqlite

from llamabot.durable.database import create_tables, engine_for
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Span, Trace, capture, current_trace, process_hooks

#: Seconds between two writes of the rows that changed.
FLUSH_S = 0.25
#: The longest attributes JSON stored for one span (characters); longer ones are stored cut, marked truncated.
MAX_ATTRIBUTES = 20_000

METADATA = sa.MetaData()
TRACES = sa.Table(
    "llamabot_traces", METADATA,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("trace_id", sa.Text, primary_key=True),
    sa.Column("bot", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=True),
    sa.Column("started_ms", sa.BigInteger, nullable=False),
    sa.Column("ended_ms", sa.BigInteger, nullable=True),
    sa.Column("spans", sa.Integer, nullable=False),
    sa.Column("prompt_tokens", sa.Integer, nullable=False),
    sa.Column("completion_tokens", sa.Integer, nullable=False),
    sa.Column("cost", sa.Float, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("written_ms", sa.BigInteger, nullable=False),
)
SPANS = sa.Table(
    "llamabot_spans", METADATA,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("trace_id", sa.Text, primary_key=True),
    sa.Column("span_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("parent_id", sa.Integer, nullable=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("category", sa.Text, nullable=False),
    sa.Column("start_ms", sa.Float, nullable=False),
    sa.Column("end_ms", sa.Float, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("attributes", sa.Text, nullable=False),
)
GRAPHS = sa.Table(
    "llamabot_graphs", METADATA,
    sa.Column("bot", sa.Text, primary_key=True),
    sa.Column("mermaid", sa.Text, nullable=False),
    sa.Column("written_ms", sa.BigInteger, nullable=False),
)


def attributes_json(span: Span) -> str:
    """A span's attributes as stored: :meth:`Span.to_dict`'s, as JSON, cut at :data:`MAX_ATTRIBUTES`."""
    text = json.dumps(span.to_dict()["attributes"], default=repr)
    if len(text) > MAX_ATTRIBUTES:
        text = json.dumps({"truncated": text[:MAX_ATTRIBUTES]})
    return text


class TraceWriter:
    """Writes the rows recorders hand it, in batches, from one thread (per process, on the runtime's database).
    A row replaces the earlier one of the same span or run not yet written."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: dict[tuple[str, str, int], dict[str, Any]] = {}
        self._runs: dict[tuple[str, str], TraceRecorder] = {}
        self._graphs: dict[str, str] = {}
        self._graphed: set[str] = set()
        self._url: str | None = None
        self._engine: sa.Engine | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def attach(self, url: str) -> None:
        """Write to ``url`` from now on (starts the writer thread; a no-op when it writes there already)."""
        with self._lock:
            if self._url == url and self._thread is not None:
                return
        self.close()
        engine = engine_for(url)
        try:
            create_tables(engine, METADATA)
        except Exception as exc:  # noqa: BLE001 - runs go on without their traces; the console says none is stored
            logger.warning("durable traces: cannot create the trace tables ({}); runs are not traced", exc)
            engine.dispose()
            return
        with self._lock:
            self._url, self._engine = url, engine
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._loop, args=(self._stop,), name="llamabot-traces",
                                            daemon=True)
            self._thread.start()

    def put(self, span_row: dict[str, Any], run: TraceRecorder) -> None:
        """Write ``span_row`` and ``run``'s summary (made when written) at the next flush."""
        with self._lock:
            self._spans[(span_row["run_id"], span_row["trace_id"], span_row["span_id"])] = span_row
            self._runs[(span_row["run_id"], span_row["trace_id"])] = run

    def put_graph(self, bot: str, mermaid: Any) -> None:
        """Store ``bot``'s graph (``mermaid()`` gives its source) unless this process did already."""
        with self._lock:
            if bot in self._graphed:
                return
            self._graphed.add(bot)
        try:
            text = str(mermaid())
        except Exception as exc:  # noqa: BLE001 - a bot without a drawable graph still runs
            text = f"%% the graph of {bot} could not be drawn: {type(exc).__name__}: {exc}"
        with self._lock:
            self._graphs[bot] = text

    def flush(self) -> None:
        """Write every row handed over so far (in one transaction). A failed write is logged and retried at the
        next flush."""
        with self._lock:
            spans, runs, graphs, engine = self._spans, self._runs, self._graphs, self._engine
            if engine is None or not (spans or runs or graphs):
                return
            self._spans, self._runs, self._graphs = {}, {}, {}
        now = int(time.time() * 1000)
        try:
            with engine.begin() as conn:
                _upsert(conn, TRACES, [{**r.summary(), "written_ms": now} for r in runs.values()])
                _upsert(conn, SPANS, list(spans.values()))
                _upsert(conn, GRAPHS, [{"bot": b, "mermaid": m, "written_ms": now} for b, m in graphs.items()])
        except Exception as exc:  # noqa: BLE001 - the database is busy or gone: the run itself decides its fate
            logger.warning("durable traces: cannot write {} spans ({}); retrying", len(spans), exc)
            with self._lock:  # put back what no newer row replaced
                for store, rows in ((self._spans, spans), (self._runs, runs), (self._graphs, graphs)):
                    for key, row in rows.items():
                        store.setdefault(key, row)

    def close(self) -> None:
        """Write what is left and stop the thread (the runtime stops)."""
        with self._lock:
            thread, stop = self._thread, self._stop
            self._thread = None
        if thread is not None:
            stop.set()
            thread.join()
        self.flush()
        with self._lock:
            engine, self._engine, self._url = self._engine, None, None
            self._graphed.clear()
        if engine is not None:
            engine.dispose()

    def _loop(self, stop: threading.Event) -> None:
        while not stop.wait(FLUSH_S):
            self.flush()


def _upsert(conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    insert = (sqlite.insert if conn.dialect.name == "sqlite" else postgresql.insert)(table)
    keys = {c.name for c in table.primary_key.columns}
    conn.execute(insert.on_conflict_do_update(index_elements=sorted(keys, key=list(table.c.keys()).index),
                                              set_={c: insert.excluded[c] for c in table.c.keys() if c not in keys}),
                 rows)


class TraceRecorder(RunHooks):
    """The hook a durable run's workflow installs: hands each span to the :class:`TraceWriter` at its start and
    end, with the run's summary (span count, tokens, cost, model). Spans carry the run's ``perf_counter`` times;
    rows carry wall-clock milliseconds, from the root span's start."""

    def __init__(self, run_id: str, bot: str, writer: TraceWriter):
        self.run_id, self.bot, self.writer = run_id, bot, writer
        self.trace: Trace | None = None
        self.root: Span | None = None
        self.model: str | None = None
        self.wall_ms = self.perf_s = 0.0

    def on_start(self, span: Span, state: Any) -> None:
        if self.root is None:
            self.root, self.trace = span, current_trace()
            self.wall_ms, self.perf_s = time.time() * 1000, span.start
        # a model call's attributes (its request) are written when it ends, a few milliseconds later: the costly
        # part of a row, and nothing a person waits on (a tool call waiting for an approval shows its arguments)
        self._put(span, "{}" if span.category == "model_call" else attributes_json(span))

    def on_end(self, span: Span, state: Any) -> None:
        if self.model is None and span.category == "model_call":
            self.model = span.attributes.get("model")
        self._put(span, attributes_json(span))

    def _ms(self, perf: float | None) -> float | None:
        return None if perf is None else self.wall_ms + (perf - self.perf_s) * 1000

    def _put(self, span: Span, attributes: str) -> None:
        self.writer.put({"run_id": self.run_id, "trace_id": span.trace_id, "span_id": span.span_id,
                         "parent_id": span.parent_id, "name": span.name, "kind": span.kind,
                         "category": span.category, "start_ms": self._ms(span.start), "end_ms": self._ms(span.end),
                         "error": span.error, "attributes": attributes}, self)

    def summary(self) -> dict[str, Any]:
        """The run's row as it is now (read by the writer's thread: counters and times, nothing mutable)."""
        root, trace = self.root, self.trace
        usage = trace.usage if trace is not None else None
        ended = root is not None and root.end is not None
        return {"run_id": self.run_id, "trace_id": root.trace_id if root is not None else "", "bot": self.bot,
                "model": self.model, "started_ms": int(self.wall_ms),
                "ended_ms": int(self._ms(root.end)) if ended else None,  # type: ignore[union-attr, arg-type]
                "spans": len(trace.spans) if trace is not None else 1,
                "prompt_tokens": usage.input_tokens if usage else 0,
                "completion_tokens": usage.output_tokens if usage else 0,
                "cost": usage.cost if usage else None, "error": root.error if root is not None else None}


#: The process's writer (the runtime attaches it to its database and closes it when it stops).
WRITER = TraceWriter()


@contextlib.contextmanager
def recording(run_id: str, factory: str, bot: Any) -> Iterator[None]:
    """Record the trace of the run made in the block (run ``run_id`` of ``factory``'s ``bot``) with
    :data:`WRITER`, and the bot's graph once. The bot's run becomes the root of the block's trace, with the
    process-wide hooks (OpenTelemetry export) it would have had as a root run."""
    WRITER.put_graph(factory, bot.to_mermaid)
    with capture(hooks=(*process_hooks(), TraceRecorder(run_id, factory, WRITER))):
        yield

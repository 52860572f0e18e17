"""What the console reads: runs (DBOS's records, through one long-lived ``DBOSClient``), their stored traces and
decisions (llamabot's tables beside DBOS's), and the bots' graphs. Read-only: decisions go through
:func:`llamabot.durable.runs.approve` / :func:`~llamabot.durable.runs.reject`, as from the CLI.

Runs are listed newest first with keyset pagination on (created ms, run id): a page costs the same on the first
and the ten-thousandth run, whatever DBOS holds (``created_at`` is indexed).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import time
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from llamabot.durable import runs
from llamabot.durable.approval import APPROVAL_EVENT
from llamabot.durable.config import WORKFLOW_NAME, resolve_db_url
from llamabot.durable.database import create_tables, engine_for
from llamabot.durable.decisions import DECISIONS
from llamabot.durable.decisions import METADATA as DECISIONS_METADATA
from llamabot.durable.serializer import refusal
from llamabot.durable.traces import GRAPHS, SPANS, TRACES
from llamabot.durable.traces import METADATA as TRACES_METADATA

#: The console's statuses, from DBOS's (a PENDING run that waits for an approval is ``waiting``).
STATUS_OF = {"ENQUEUED": "queued", "DELAYED": "queued", "PENDING": "running", "SUCCESS": "succeeded",
             "ERROR": "failed", "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed", "CANCELLED": "cancelled"}
#: The statuses a list can be filtered by, and the DBOS statuses each reads.
FILTERS = {"running": ("PENDING",), "waiting": ("PENDING",), "queued": ("ENQUEUED", "DELAYED"),
           "succeeded": ("SUCCESS",), "failed": ("ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"),
           "cancelled": ("CANCELLED",)}
FINISHED = ("succeeded", "failed", "cancelled")
#: Most PENDING runs one page of ``running`` or ``waiting`` looks through (each needs its approval event read).
SCAN_LIMIT = 2_000


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as the console shows it. ``waiting``: the pending approval (tool, arguments, request number);
    ``duration_ms``: until it ended, or until now while it runs; tokens and cost summed over its executions."""

    run_id: str
    status: str
    bot: str | None
    query: Any
    created_ms: int
    duration_ms: int | None
    waiting: dict[str, Any] | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    executor: str | None = None
    result: Any = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RunsPage:
    """One page of the runs list and the cursor of the next (``None`` on the last)."""

    rows: list[RunRow]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class StoredSpan:
    """A span as stored by :mod:`llamabot.durable.traces` (times in wall-clock ms)."""

    trace_id: str
    span_id: int
    parent_id: int | None
    name: str
    kind: str
    category: str
    start_ms: float
    end_ms: float | None
    error: str | None
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DecisionRow:
    """A recorded decision on one of the run's approvals."""

    request: int
    verdict: str
    arguments: Any
    reason: str
    by: str
    at_ms: int


def parse_cursor(text: str | None) -> tuple[int, str] | None:
    """``"<created ms>:<run id>"`` -> its parts; ``ValueError`` for anything else."""
    if not text:
        return None
    ms, sep, run_id = text.partition(":")
    if not sep or not ms.isdigit() or not run_id:
        raise ValueError(f"not a cursor of the runs list: {text!r}")
    return int(ms), run_id


def _iso(ms: int) -> str:
    # half a millisecond on: DBOS converts the time back with int(timestamp * 1000), which must give ``ms``
    return datetime.datetime.fromtimestamp((ms + 0.5) / 1000, datetime.timezone.utc).isoformat()


class RunsReader:
    """Reads the runs' database for the console's pages (open for the console's lifetime; :meth:`close`)."""

    def __init__(self, db: str | None = None):
        self.url = resolve_db_url(db)
        self._open = contextlib.ExitStack()
        self.client = self._open.enter_context(runs.client(self.url))  # DatabaseUnreachableError, migrated
        self.engine = engine_for(self.url)
        self._open.callback(self.engine.dispose)
        create_tables(self.engine, TRACES_METADATA)
        create_tables(self.engine, DECISIONS_METADATA)

    def close(self) -> None:
        self._open.close()

    # -- the list ------------------------------------------------------------------------------------------

    def page(self, status: str | None = None, cursor: str | None = None, size: int = 50) -> RunsPage:
        """Runs newest first, after ``cursor``, only ``status`` (a key of :data:`FILTERS`; ``KeyError``
        otherwise)."""
        statuses = list(FILTERS[status]) if status else None
        before = parse_cursor(cursor)
        found: list[RunRow] = []
        scanned, more = 0, True
        while len(found) <= size and more and scanned < SCAN_LIMIT:
            window, more = self._window(statuses, before, size + 1 - len(found))
            scanned += len(window)
            rows = self._rows(window)
            found += [r for r in rows if status is None or r.status == status]
            if window:
                before = (window[-1].created_at, window[-1].workflow_id)
        rows = found[:size]
        if len(found) > size:  # the next page starts after the last run shown
            return RunsPage(rows, f"{rows[-1].created_ms}:{rows[-1].run_id}")
        # after the last run looked at, when the scan stopped before the end (a filter few runs match)
        return RunsPage(rows, f"{before[0]}:{before[1]}" if more and before is not None else None)

    def _window(self, statuses: list[str] | None, before: tuple[int, str] | None, size: int) -> tuple[list[Any], bool]:
        """Up to ``size`` DBOS statuses before ``before`` in (created, id) order, descending (more when a tie of
        creation times is read whole), and whether any are left after them."""
        size = max(size, 1)
        listing = {"name": WORKFLOW_NAME, "status": statuses, "sort_desc": True, "load_input": True,
                   "load_output": False}
        found: list[Any] = []
        if before is not None:
            ms, run_id = before
            found += [s for s in self.client.list_workflows(start_time=_iso(ms), end_time=_iso(ms), **listing)
                      if s.workflow_id < run_id]
            rest = self.client.list_workflows(end_time=_iso(ms - 1), limit=size + 1, **listing)
        else:
            rest = self.client.list_workflows(limit=size + 1, **listing)
        more = len(rest) > size
        if more:  # the last creation time may have more runs than were read: read them all
            ms = rest[-1].created_at
            rest = [s for s in rest if s.created_at != ms] + self.client.list_workflows(
                start_time=_iso(ms), end_time=_iso(ms), **listing)
        found += rest
        found.sort(key=lambda s: (s.created_at, s.workflow_id), reverse=True)
        if len(found) > size:
            found, more = found[:size], True
        return found, more

    def _rows(self, statuses: list[Any], outputs: bool = False) -> list[RunRow]:
        usage = self._usage([s.workflow_id for s in statuses])
        now = int(time.time() * 1000)
        rows = []
        for s in statuses:
            status = STATUS_OF.get(s.status, s.status.lower())
            waiting = self._waiting(s.workflow_id) if s.status == "PENDING" else None
            if waiting:
                status = "waiting"
            inputs = s.input if isinstance(s.input, dict) else {}
            args = inputs.get("args", ())
            args = args if isinstance(args, tuple | list) else ()
            model, prompt, completion, cost, first, last = usage.get(s.workflow_id, (None,) * 6)
            if status in FINISHED:  # the trace's times when it has them (DBOS's are whole seconds on SQLite)
                duration = last - first if first is not None and last is not None else (s.updated_at or now) - s.created_at
            else:
                duration = now - (first if first is not None else s.created_at)
            refused = [e for e in (refusal(s.input), refusal(s.output), refusal(s.error)) if e is not None]
            error = "; ".join(f"{type(e).__name__}: {e}" for e in refused) or (
                None if s.error is None else f"{type(s.error).__name__}: {s.error}")
            rows.append(RunRow(
                run_id=s.workflow_id, status=status, bot=args[0] if args else None,
                query=args[1] if len(args) > 1 else None, created_ms=s.created_at,
                duration_ms=max(0, int(duration)), waiting=waiting, model=model, prompt_tokens=prompt,
                completion_tokens=completion, cost=cost, executor=s.executor_id,
                result=None if refused or not outputs else s.output, error=error,
            ))
        return rows

    def _waiting(self, run_id: str) -> dict[str, Any] | None:
        try:
            record = self.client.get_event(run_id, APPROVAL_EVENT, timeout_seconds=0)
        except Exception:  # noqa: BLE001 - a record llamabot refuses to read: shown as not waiting
            return None
        return record if isinstance(record, dict) and record.get("waiting") else None

    def _usage(self, run_ids: list[str]) -> dict[str, tuple[Any, ...]]:
        """Per run: model, prompt and completion tokens, cost, first start and last end (ms) of its traces."""
        if not run_ids:
            return {}
        query = sa.select(TRACES.c.run_id, sa.func.max(TRACES.c.model), sa.func.sum(TRACES.c.prompt_tokens),
                          sa.func.sum(TRACES.c.completion_tokens), sa.func.sum(TRACES.c.cost),
                          sa.func.min(TRACES.c.started_ms), sa.func.max(TRACES.c.ended_ms)
                          ).where(TRACES.c.run_id.in_(run_ids)).group_by(TRACES.c.run_id)
        with self.engine.connect() as conn:
            return {r[0]: tuple(r[1:]) for r in conn.execute(query)}

    # -- one run -------------------------------------------------------------------------------------------

    def run(self, run_id: str) -> RunRow | None:
        """Run ``run_id`` with its result or error; ``None`` when no durable run has this id."""
        found = self.client.list_workflows(workflow_ids=[run_id], name=WORKFLOW_NAME, load_input=True,
                                           load_output=True)
        return self._rows(found, outputs=True)[0] if found else None

    def spans(self, run_id: str) -> list[StoredSpan]:
        """The stored spans of every execution of the run, oldest execution first, each in start order."""
        query = (sa.select(SPANS, TRACES.c.started_ms).join(TRACES, sa.and_(
            TRACES.c.run_id == SPANS.c.run_id, TRACES.c.trace_id == SPANS.c.trace_id))
            .where(SPANS.c.run_id == run_id).order_by(TRACES.c.started_ms, SPANS.c.trace_id, SPANS.c.span_id))
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        return [_stored(r) for r in rows]

    def span(self, run_id: str, trace_id: str, span_id: int) -> StoredSpan | None:
        """One stored span of the run, or ``None``."""
        with self.engine.connect() as conn:
            r = conn.execute(sa.select(SPANS).where(SPANS.c.run_id == run_id, SPANS.c.trace_id == trace_id,
                                                    SPANS.c.span_id == span_id)).mappings().first()
        return None if r is None else _stored(r)

    def stamp(self, run_id: str) -> tuple[Any, ...] | None:
        """What changes when the run's page must change: its status, its last update, its waiting approval,
        when its trace was last written. ``None`` for an unknown run."""
        found = self.client.list_workflows(workflow_ids=[run_id], name=WORKFLOW_NAME, load_input=False,
                                           load_output=False)
        if not found:
            return None
        status = found[0]
        waiting = self._waiting(run_id) if status.status == "PENDING" else None
        with self.engine.connect() as conn:
            written = conn.execute(sa.select(sa.func.max(TRACES.c.written_ms), sa.func.sum(TRACES.c.spans))
                                   .where(TRACES.c.run_id == run_id)).first()
        return (status.status, status.updated_at, waiting and waiting.get("request"), *(written or ()))

    def decisions(self, run_id: str) -> list[DecisionRow]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(DECISIONS).where(DECISIONS.c.run_id == run_id)
                                .order_by(DECISIONS.c.request)).mappings().all()
        return [DecisionRow(r["request"], r["verdict"], _loads(r["arguments"]) if r["arguments"] else None,
                            r["reason"], r["decided_by"], r["decided_at_ms"]) for r in rows]

    def graph(self, bot: str | None) -> str | None:
        """The mermaid source of ``bot``'s graph, as its last run stored it."""
        if not bot:
            return None
        with self.engine.connect() as conn:
            return conn.execute(sa.select(GRAPHS.c.mermaid).where(GRAPHS.c.bot == bot)).scalar()

    def waiting_runs(self, limit: int = 200) -> list[RunRow]:
        """The runs that wait for an approval, newest first."""
        return self.page("waiting", size=limit).rows


def _stored(r: Any) -> StoredSpan:
    return StoredSpan(r["trace_id"], r["span_id"], r["parent_id"], r["name"], r["kind"], r["category"],
                      r["start_ms"], r["end_ms"], r["error"], _loads(r["attributes"]))


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return {"unreadable": text}

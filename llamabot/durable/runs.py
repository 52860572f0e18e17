"""Durable runs seen from outside: list, show, approve, reject, wait for a result, enqueue.

These work from any process that can reach the database (the CLI, a service, a test), whether or not it runs a
durable runtime itself: they go through a ``DBOSClient``, which only reads and writes the database and never
executes a run. Every function takes the database as ``db`` (resolved like everywhere else: argument,
``$LLAMABOT_DB``, the default SQLite file).
"""

from __future__ import annotations

import contextlib
import datetime
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dbos import DBOS, DBOSClient
from dbos import error as dbos_error

from llamabot.durable.approval import APPROVAL_EVENT, Decision, json_data
from llamabot.durable.config import (
    QUEUE_NAME,
    WORKFLOW_NAME,
    WORKFLOW_VERSION,
    liveness_seconds,
    redacted,
    resolve_db_url,
)
from llamabot.durable.database import check_reachable
from llamabot.durable.decisions import decided, decisions_engine, default_decider, last_decided, send_first
from llamabot.durable.errors import (
    DatabaseUnreachableError,
    NotStorableError,
    NotWaitingError,
    RecordRefusedError,
    RunFailedError,
    RunFinishedError,
    RunInFlightError,
    UnknownRunError,
)
from llamabot.durable.executors import claim_holder, executors_engine, recover, silence
from llamabot.durable.serializer import SERIALIZER, refusal, refuse_pickle


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One durable run as stored: ``status`` is DBOS's (``PENDING``, ``ENQUEUED``, ``SUCCESS``, ``ERROR``,
    ``CANCELLED``...); ``waiting`` the pending approval (tool, arguments, request number) when it waits for one;
    ``steps`` (from :func:`show_run`) the completed steps in order as ``(step number, name)``;
    ``executor_silent_s`` (from :func:`show_run`, PENDING runs) the seconds since its executor's last heartbeat
    (very large once it stopped; ``None`` when it never beat)."""

    run_id: str
    status: str
    factory: str | None
    query: Any
    result: Any = None
    error: str | None = None
    waiting: dict[str, Any] | None = None
    executor: str | None = None
    created_ms: int | None = None
    steps: tuple[tuple[int, str], ...] = field(default=())
    executor_silent_s: float | None = None


@contextlib.contextmanager
def client(db: str | None = None) -> Iterator[DBOSClient]:
    """A ``DBOSClient`` on ``db`` for the block; :class:`DatabaseUnreachableError` when it cannot connect."""
    url = resolve_db_url(db)
    check_reachable(url)
    refuse_pickle()
    try:
        DBOS.migrate(url)  # idempotent: a database no run has used yet reads as empty, not as an error
        opened = DBOSClient(system_database_url=url, retry_connection_errors=False, serializer=SERIALIZER)
    except Exception as exc:
        raise DatabaseUnreachableError(f"cannot open the durable-runs database {redacted(url)}: {exc}") from exc
    try:
        yield opened
    finally:
        opened.destroy()


#: The statuses a run can have (DBOS's), and ``WAITING``: PENDING and waiting for an approval.
STATUSES = ("ENQUEUED", "PENDING", "WAITING", "SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
#: The statuses of a run that is over: nothing to cancel or resume.
FINISHED = ("SUCCESS", "ERROR")


def list_runs(db: str | None = None, *, status: str | Sequence[str] | None = None, older_than: float | None = None,
              limit: int = 50) -> list[RunInfo]:
    """The most recent runs (newest first): only those with ``status`` (one of :data:`STATUSES`, or several),
    only those started more than ``older_than`` seconds ago; ``waiting`` is filled for pending runs. ``ValueError``
    for an unknown status."""
    wanted = [status] if isinstance(status, str) else list(status or ())
    unknown = [s for s in wanted if s.upper() not in STATUSES]
    if unknown:
        raise ValueError(f"unknown run status {', '.join(map(repr, unknown))}; use one of {', '.join(STATUSES)}")
    wanted = [s.upper() for s in wanted]
    waiting_only = "WAITING" in wanted and "PENDING" not in wanted
    statuses = sorted({"PENDING" if s == "WAITING" else s for s in wanted}) or None
    before = None
    if older_than is not None:
        before = datetime.datetime.fromtimestamp(time.time() - older_than, datetime.timezone.utc).isoformat()
    with client(db) as c:
        found = c.list_workflows(name=WORKFLOW_NAME, status=statuses, end_time=before, sort_desc=True,
                                 load_output=True, limit=None if waiting_only else limit)
        runs = [_info(c, s) for s in found]
    if waiting_only:
        runs = [r for r in runs if r.waiting or r.status != "PENDING"]
    return runs[:limit]


def cancel(run_id: str, db: str | None = None) -> RunInfo:
    """Cancel run ``run_id`` (queued, in flight, or waiting for an approval): it stops at its next step and is
    never resumed by recovery. :class:`UnknownRunError`; :class:`RunFinishedError` for a run that is over or
    cancelled already."""
    with client(db) as c:
        status = _status(c, run_id)
        if status.status in (*FINISHED, "CANCELLED"):
            raise RunFinishedError(f"run {run_id} is {status.status} already; there is nothing to cancel")
        c.cancel_workflow(run_id)
        return _info(c, _status(c, run_id))


def resume(run_id: str, db: str | None = None, *, force: bool = False) -> RunInfo:
    """Recover run ``run_id`` now: put it back on the llamabot queue, where a worker (or the next process on the
    database that dequeues) goes on from its last completed step. For a PENDING run whose executor stopped
    heart-beating (without waiting for ``$LLAMABOT_DURABLE_ORPHAN_S``), or a cancelled one.

    :class:`UnknownRunError`; :class:`RunFinishedError` for a run that is over; :class:`RunInFlightError` for a
    queued run, a run whose executor is alive (``force=True`` takes it over anyway: the live execution stops at
    its next step, and its step in flight may run twice), or one another process is recovering now."""
    url = resolve_db_url(db)
    with client(url) as c:
        status = _status(c, run_id)
        if status.status in FINISHED:
            raise RunFinishedError(f"run {run_id} is {status.status}; there is nothing to resume")
        if status.status in ("ENQUEUED", "DELAYED"):
            raise RunInFlightError(f"run {run_id} is {status.status}: a worker on this database will start it")
        if status.status != "PENDING":  # cancelled, or dead-lettered after too many recoveries
            c.resume_workflow(run_id, queue_name=QUEUE_NAME)
            return _info(c, _status(c, run_id))
        _, timeout_s = liveness_seconds()
        with executors_engine(url) as engine:
            silent = silence(engine)[0].get(status.executor_id)
            if silent is not None and silent < timeout_s and not force:
                raise RunInFlightError(
                    f"run {run_id} is in flight on executor {status.executor_id} (heartbeat {silent:.0f} s ago); it "
                    "needs no recovery (force it to take the run over: the live execution stops at its next step)"
                )
            by = f"resume:{default_decider()}"
            if recover(engine, c, status.executor_id, by, timeout_s, only=run_id, force=force) is None:
                holder = claim_holder(engine, status.executor_id)
                raise RunInFlightError(
                    f"run {run_id}: the runs of executor {status.executor_id} are being recovered by "
                    f"{holder[0] if holder else 'another process'} right now"
                )
        return _info(c, _status(c, run_id))


def show_run(run_id: str, db: str | None = None) -> RunInfo:
    """One run with its completed steps, and for a PENDING run how long its executor has been silent;
    :class:`UnknownRunError` when no run has this id."""
    url = resolve_db_url(db)
    with client(url) as c:
        status = _status(c, run_id)
        steps = tuple((s["function_id"], s["function_name"]) for s in c.list_workflow_steps(run_id, load_output=False))
        quiet = None
        if status.status == "PENDING" and status.executor_id:
            with executors_engine(url) as engine:
                quiet = silence(engine)[0].get(status.executor_id)
        return replace(_info(c, status), steps=steps, executor_silent_s=quiet)


def approve(run_id: str, arguments: dict[str, Any] | None = None, db: str | None = None, *,
            by: str | None = None, request: int | None = None) -> dict[str, Any]:
    """Approve the tool call run ``run_id`` waits for, optionally with edited ``arguments`` (validated by the run
    against the tool's schema; invalid ones are shown to the model as the tool's error). Returns the pending
    record that was answered. ``by``: who decides (default ``user@host``). ``request``: the number of the
    approval this decision answers (``RunInfo.waiting["request"]``, as shown); when given, a run that waits for
    another one is refused, so that a decision made on what a person saw never answers a later tool call.
    :class:`UnknownRunError`, :class:`NotWaitingError`, :class:`AlreadyDecidedError` (someone decided first: that
    decision stands), :class:`~llamabot.durable.errors.NotStorableError` (arguments that are not JSON data)."""
    if arguments is not None:
        if not isinstance(arguments, dict):
            raise NotStorableError(
                f"approve {run_id}: arguments must be a JSON object (a dict), got {type(arguments).__name__}")
        arguments = json_data(arguments, f"the edited arguments for run {run_id}")
    return _decide(run_id, "approve", arguments, "", db, by, request)


def reject(run_id: str, reason: str = "", db: str | None = None, *, by: str | None = None,
           request: int | None = None) -> dict[str, Any]:
    """Reject the tool call run ``run_id`` waits for; the model is shown the rejection and ``reason``. Raises as
    :func:`approve` does (``request``: the approval this decision answers, as there)."""
    return _decide(run_id, "reject", None, reason, db, by, request)


def _decide(run_id: str, verdict: str, arguments: dict[str, Any] | None, reason: str, db: str | None,
            by: str | None, request: int | None = None) -> dict[str, Any]:
    if request is not None and (type(request) is not int or request < 1):
        raise ValueError(f"{verdict} {run_id}: request must be an approval number (1, 2, ...), got {request!r}")
    url = resolve_db_url(db)
    with client(url) as c, decisions_engine(url) as engine:
        status = _status(c, run_id)
        pending = _waiting(c, run_id, status.status)
        if request is not None and (pending is None or pending["request"] != request):
            first = decided(engine, run_id, request)
            if first is not None:
                raise first.refusal(run_id)
            now = (f"waits for approval #{pending['request']} ({pending['tool']})" if pending is not None
                   else f"is not waiting for an approval (status {status.status})")
            raise NotWaitingError(f"run {run_id} {now}, not approval #{request}; this decision was not sent "
                                  f"(`llamabot runs show {run_id}` shows what it waits for)")
        if pending is None:
            first = last_decided(engine, run_id)
            if first is not None:
                raise first.refusal(run_id)
            raise NotWaitingError(
                f"run {run_id} is not waiting for an approval (status {status.status}); "
                "`llamabot runs list` shows the runs that wait"
            )
        decision = Decision(pending["request"], verdict, arguments, reason)  # type: ignore[arg-type]
        send_first(engine, c, run_id, decision, by or default_decider())  # the first decision wins, atomically
        return pending


def wait_result(run_id: str, db: str | None = None, *, via: DBOSClient | None = None) -> Any:
    """Wait for run ``run_id`` to finish and return its result (from any process). The run's own exception is
    raised as it was; a cancelled run raises :class:`RunFailedError`. ``via``: an open :func:`client` to reuse
    (when waiting for many runs)."""
    with _using(via, db) as c:
        _status(c, run_id)
        try:
            return c.retrieve_workflow(run_id).get_result(polling_interval_sec=0.05)
        except Exception as exc:
            if type(exc).__module__.startswith("dbos"):
                raise RunFailedError(f"run {run_id}: {exc}") from exc
            raise


def enqueue(factory: str, query: Any, options: dict[str, Any], run_id: str, db: str | None = None, *,
            via: DBOSClient | None = None) -> str:
    """Put a run on the queue for any worker on ``db`` (no runtime needed in this process); returns its id.
    ``via``: an open :func:`client` to reuse."""
    with _using(via, db) as c:
        c.enqueue({"workflow_name": WORKFLOW_NAME, "queue_name": QUEUE_NAME, "workflow_id": run_id,
                   "app_version": WORKFLOW_VERSION}, factory, query, options)
    return run_id


@contextlib.contextmanager
def _using(via: DBOSClient | None, db: str | None) -> Iterator[DBOSClient]:
    if via is not None:
        yield via
    else:
        with client(db) as c:
            yield c


def _status(c: DBOSClient, run_id: str) -> Any:
    try:
        status = c.retrieve_workflow(run_id).get_status()
    except dbos_error.DBOSNonExistentWorkflowError:
        status = None
    if status is None or status.name != WORKFLOW_NAME:
        raise UnknownRunError(f"no durable run has the id {run_id!r}; `llamabot runs list` shows the runs")
    return status


def _waiting(c: DBOSClient, run_id: str, status: str) -> dict[str, Any] | None:
    """The pending approval record of a run that waits for one; :class:`RecordRefusedError` when the stored
    event is not llamabot's."""
    if status != "PENDING":
        return None
    record = c.get_event(run_id, APPROVAL_EVENT, timeout_seconds=0)
    return record if isinstance(record, dict) and record.get("waiting") else None


def _info(c: DBOSClient, status: Any) -> RunInfo:
    """A run as stored. A record llamabot refused to load (DBOS hands its raw text back in its place) reads as
    nothing, and the refusal is the run's ``error``."""
    refused = [e for e in (refusal(status.input), refusal(status.output), refusal(status.error)) if e is not None]
    inputs = status.input if isinstance(status.input, dict) else {}
    args = inputs.get("args", ())
    args = args if isinstance(args, tuple) else ()
    try:
        waiting = _waiting(c, status.workflow_id, status.status)
    except RecordRefusedError as exc:
        waiting = None
        refused.append(exc)
    error = None if status.error is None or refused else f"{type(status.error).__name__}: {status.error}"
    if refused:
        error = "; ".join(f"{type(e).__name__}: {e}" for e in refused)
    return RunInfo(
        run_id=status.workflow_id, status=status.status, factory=args[0] if args else None,
        query=args[1] if len(args) > 1 else None, result=None if refused else status.output, error=error,
        waiting=waiting, executor=status.executor_id, created_ms=status.created_at,
    )

"""Executors: which processes execute durable runs, whether they are alive, and who recovers a dead one's runs.

DBOS tags each run with the executor id of the process executing it, and a process recovers, when it starts, only
the PENDING runs of its own id. In a deployment, containers are replaced with new names and new ids, so the runs
of a killed container would wait for ever. Here:

- **Heartbeats.** Every process with a durable runtime records one row in ``llamabot_executors`` (its executor
  id, host, pid) and refreshes its ``beat_ms`` every ``$LLAMABOT_DURABLE_HEARTBEAT_S`` seconds, by the database's
  clock. A process that stops (gracefully) marks its row stopped, so its parked runs are recovered at once.
- **Orphans.** An executor id is dead when none of its rows has beaten for ``$LLAMABOT_DURABLE_ORPHAN_S`` seconds
  (an id no row ever named: when its runs have not changed for that long). A worker (``recover=True``) looks at
  every heartbeat for PENDING runs of dead executors and recovers them with DBOS's public
  ``resume_workflow(run_id, queue_name=QUEUE_NAME)``: the run goes back on the llamabot queue, where exactly one
  live worker dequeues it (DBOS's dequeue is atomic) and goes on from its last completed step.
- **Exactly once among racing workers.** Before it resumes any run of a dead executor, a worker *claims* that
  executor's recovery in ``llamabot_recoveries`` (one row per executor id; an insert or a conditional update,
  atomic in the database). A claim holds for the orphan timeout, and its holder resumes runs only during the first
  half of it, so two workers never resume the runs of one executor at the same time. A process that starts with
  the id of a dead executor (whose DBOS start-up recovers that id's runs) claims it the same way before it
  launches, and waits while another process's claim is younger than half the timeout.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from loguru import logger
from sqlalchemy.dialects import postgresql, sqlite

from llamabot.durable.config import QUEUE_NAME, WORKFLOW_NAME, WORKFLOW_VERSION, liveness_seconds
from llamabot.durable.database import create_tables, engine_for, engine_with, now_ms

METADATA = sa.MetaData()
PROCESSES = sa.Table(
    "llamabot_executors", METADATA,
    sa.Column("process", sa.Text, primary_key=True),  # one row per process start
    sa.Column("executor_id", sa.Text, nullable=False, index=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_ms", sa.BigInteger, nullable=False),
    sa.Column("beat_ms", sa.BigInteger, nullable=False),  # STOPPED once the process stopped
)
RECOVERIES = sa.Table(
    "llamabot_recoveries", METADATA,
    sa.Column("executor_id", sa.Text, primary_key=True),
    sa.Column("claimed_by", sa.Text, nullable=False),
    sa.Column("claimed_ms", sa.BigInteger, nullable=False),
)
#: ``beat_ms`` of a process that stopped.
STOPPED = 0
#: Rows of processes silent for this long are deleted (by the workers' sweeps).
FORGET_MS = 7 * 86_400_000

#: What the DBOS listing and resume calls need: ``DBOS`` itself, or a ``DBOSClient``.
Workflows = Any


def default_executor_id() -> str:
    """The executor id DBOS gives a process that names none: ``$DBOS__VMID``, else ``local``."""
    return os.environ.get("DBOS__VMID") or "local"


def executors_engine(url: str) -> contextlib.AbstractContextManager[sa.Engine]:
    """An engine on the runs' database with the executors' tables, for the block."""
    return engine_with(url, METADATA)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _insert(engine: sa.Engine) -> Any:
    return sqlite.insert if engine.dialect.name == "sqlite" else postgresql.insert


#: How the claim of a process starting with an executor id is marked (``start:<process name>``).
START = "start:"


def claim(engine: sa.Engine, executor_id: str, by: str, hold_s: float) -> bool:
    """Claim the recovery of ``executor_id``'s runs for ``by``: true when no claim on it is younger than
    ``hold_s`` seconds (then this one holds from now on), atomically in the database. A process starting with
    the id (``by`` marked :data:`START`) takes over the claim of an earlier start at once: only a worker's claim
    makes it wait."""
    now = now_ms(engine)
    expired = RECOVERIES.c.claimed_ms < now - int(hold_s * 1000)
    if by.startswith(START):
        expired = sa.or_(expired, RECOVERIES.c.claimed_by.startswith(START))
    with engine.begin() as conn:
        inserted = conn.execute(
            _insert(engine)(RECOVERIES).values(executor_id=executor_id, claimed_by=by, claimed_ms=now)
            .on_conflict_do_nothing().returning(RECOVERIES.c.executor_id)
        ).first()
        if inserted is not None:
            return True
        taken = conn.execute(
            sa.update(RECOVERIES)
            .where(RECOVERIES.c.executor_id == executor_id, expired)
            .values(claimed_by=by, claimed_ms=now)
        )
        return taken.rowcount == 1


def claim_holder(engine: sa.Engine, executor_id: str) -> tuple[str, float] | None:
    """Who claimed ``executor_id``'s recovery last, and how many seconds ago."""
    with engine.connect() as conn:
        row = conn.execute(sa.select(RECOVERIES.c.claimed_by, now_ms(engine) - RECOVERIES.c.claimed_ms)
                           .where(RECOVERIES.c.executor_id == executor_id)).first()
    return None if row is None else (row[0], row[1] / 1000)


def silence(engine: sa.Engine) -> tuple[dict[str, float], int]:
    """Seconds since each executor id's latest heartbeat (the freshest of its processes; a stopped one reads as
    silent since ever), and the database's clock in milliseconds."""
    with engine.connect() as conn:
        now = conn.execute(sa.select(now_ms(engine))).scalar_one()
        rows = conn.execute(sa.select(PROCESSES.c.executor_id, sa.func.max(PROCESSES.c.beat_ms))
                            .group_by(PROCESSES.c.executor_id)).all()
    return {executor: (now - beat) / 1000 for executor, beat in rows}, now


def recover(engine: sa.Engine, workflows: Workflows, executor_id: str, by: str, timeout_s: float, *,
            only: str | None = None, force: bool = False) -> list[str] | None:
    """Recover the PENDING runs of dead executor ``executor_id`` (only run ``only``, if given): claim its
    recovery, then put each run back on the llamabot queue. Returns the runs resumed, or ``None`` when another
    process holds the claim (``force``: take the claim anyway). ``workflows``: ``DBOS`` in a process with a
    runtime, else a ``DBOSClient``."""
    started = time.monotonic()
    if not claim(engine, executor_id, by, 0 if force else timeout_s):
        return None
    runs = workflows.list_workflows(status="PENDING", executor_id=executor_id, name=WORKFLOW_NAME,
                                    app_version=WORKFLOW_VERSION, workflow_ids=None if only is None else [only],
                                    load_input=False, load_output=False)
    resumed = []
    for run in runs:
        if time.monotonic() - started > timeout_s / 2:  # past half the claim: another worker may claim it soon
            break
        workflows.resume_workflow(run.workflow_id, queue_name=QUEUE_NAME)
        resumed.append(run.workflow_id)
    return resumed


class Heartbeat:
    """This process's liveness in the database, and, for a worker, the recovery of dead executors' runs.

    :meth:`begin` before DBOS launches (it claims this executor id's own recovery, see the module), :meth:`run`
    once it has (the thread that beats and sweeps), :meth:`end` when the process stops. ``recovered`` is told
    ``(dead executor id, run ids)`` after each recovery."""

    def __init__(self, url: str, executor_id: str, *, recover: bool = False,
                 recovered: Callable[[str, list[str]], None] | None = None):
        self.interval_s, self.timeout_s = liveness_seconds()
        self.url, self.executor_id, self.recover, self.recovered = url, executor_id, recover, recovered
        self.process = uuid.uuid4().hex
        self.name = f"{executor_id}@{socket.gethostname()}:{os.getpid()}"
        self._stop = threading.Event()
        self._next_full = 0.0  # when the sweep lists every PENDING run again (time.monotonic)
        self._thread: threading.Thread | None = None
        self.engine: sa.Engine | None = None

    def begin(self) -> None:
        """Create the tables, wait out another process's fresh claim on this executor id, claim it, beat once."""
        self.engine = engine_for(self.url)
        create_tables(self.engine, METADATA)
        while not claim(self.engine, self.executor_id, START + self.name, self.timeout_s / 2):
            holder = claim_holder(self.engine, self.executor_id)
            logger.warning("executor {}: {} is recovering its runs; starting when it is done", self.executor_id,
                           holder[0] if holder else "another process")
            time.sleep(min(1.0, self.timeout_s / 4))
        for host, pid, quiet in self._others():
            logger.warning(
                "executor id {!r} is in use by a live process ({}:{}, heartbeat {:.0f} s ago): DBOS recovers the "
                "PENDING runs of an id when a process starts, so runs in flight there may repeat their current step; "
                "give each process its own executor id", self.executor_id, host, pid, quiet)
        with self.engine.begin() as conn:
            now = now_ms(self.engine)
            conn.execute(PROCESSES.insert().values(process=self.process, executor_id=self.executor_id,
                                                   host=socket.gethostname(), pid=os.getpid(), started_ms=now,
                                                   beat_ms=now))

    def _others(self) -> list[tuple[str, int, float]]:
        """Other processes of this executor id that beat within the timeout, as ``(host, pid, seconds)``; a
        process of this host that no longer exists (the one this process restarts after a kill) is not one."""
        assert self.engine is not None
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(PROCESSES.c.host, PROCESSES.c.pid, now_ms(self.engine) - PROCESSES.c.beat_ms)
                                .where(PROCESSES.c.executor_id == self.executor_id,
                                       PROCESSES.c.beat_ms >= now_ms(self.engine) - int(self.timeout_s * 1000))).all()
        return [(host, pid, quiet / 1000) for host, pid, quiet in rows  # a restarted container may reuse its pid
                if host != socket.gethostname() or (pid != os.getpid() and _exists(pid))]

    def run(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="llamabot-heartbeat", daemon=True)
        self._thread.start()

    def end(self) -> None:
        """Stop beating and mark this process stopped (its PENDING runs are recovered by the next sweep)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        if self.engine is not None:
            try:
                self._write(beat_ms=STOPPED)
            except sa.exc.SQLAlchemyError as exc:  # the database went away: the rows time out instead
                logger.warning("executor {}: could not mark itself stopped: {}", self.executor_id, exc)
            self.engine.dispose()

    def _write(self, **values: Any) -> None:
        assert self.engine is not None
        with self.engine.begin() as conn:
            conn.execute(sa.update(PROCESSES).where(PROCESSES.c.process == self.process).values(**values))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                assert self.engine is not None
                self._write(beat_ms=now_ms(self.engine))
                if self.recover:
                    self.sweep()
            except Exception as exc:  # noqa: BLE001 - a database hiccup: beat again at the next interval
                logger.warning("executor {}: heartbeat failed ({}: {})", self.executor_id, type(exc).__name__, exc)

    def sweep(self) -> dict[str, list[str]]:
        """Recover the PENDING runs of every dead executor (see the module); returns what was resumed. It lists
        only the PENDING runs of executors whose heartbeats stopped; once per orphan timeout it lists every
        PENDING run, for executors that never beat (processes of an older llamabot), and forgets rows silent for
        a week."""
        from dbos import DBOS

        assert self.engine is not None
        silent, now = silence(self.engine)
        dead = {e for e, quiet in silent.items() if quiet >= self.timeout_s and e != self.executor_id}
        listing: dict[str, Any] = {"status": "PENDING", "name": WORKFLOW_NAME, "app_version": WORKFLOW_VERSION,
                                   "load_input": False, "load_output": False}
        if time.monotonic() >= self._next_full:
            self._next_full = time.monotonic() + self.timeout_s
            pending = DBOS.list_workflows(**listing)
            dead |= {run.executor_id for run in pending if run.executor_id and run.executor_id not in silent
                     and run.updated_at is not None and now - run.updated_at >= self.timeout_s * 1000}
            with self.engine.begin() as conn:
                conn.execute(sa.delete(PROCESSES).where(PROCESSES.c.beat_ms < now - FORGET_MS))
        elif dead:
            pending = DBOS.list_workflows(executor_id=sorted(dead), **listing)
        else:
            return {}
        dead &= {run.executor_id for run in pending}
        done = {}
        for executor in sorted(dead):
            resumed = recover(self.engine, DBOS, executor, self.name, self.timeout_s)
            if resumed:
                done[executor] = resumed
                logger.warning("executor {}: recovered {} PENDING runs of dead executor {}", self.executor_id,
                               len(resumed), executor)
                if self.recovered is not None:
                    self.recovered(executor, resumed)
        return done

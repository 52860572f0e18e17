"""``llamabot worker``: a process that executes queued durable runs until it is stopped.

Any number of workers may share one PostgreSQL database; the queue hands each run to one of them. A worker
restarted with the same ``executor_id`` recovers the runs it had in flight (from their last completed step); the
runs of a worker that never comes back (a replaced container, a new id) are recovered by the live workers once its
heartbeat is older than ``$LLAMABOT_DURABLE_ORPHAN_S`` (:mod:`llamabot.durable.executors`).

On SIGTERM or SIGINT a worker stops dequeuing, lets the steps in flight finish within the grace period
(``$LLAMABOT_DURABLE_GRACE_S``), leaves its other runs PENDING for the live workers, and returns; a second signal
stops waiting.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable

from llamabot.durable.config import grace_seconds
from llamabot.durable.drain import DRAIN
from llamabot.durable.runtime import launch, shutdown


def worker_id() -> str:
    """The executor id of a worker that names none: ``$DBOS__VMID``, else ``<host>-<pid>`` (unique, so two
    workers never share one; its runs are recovered by the others if it never comes back)."""
    return os.environ.get("DBOS__VMID") or f"{socket.gethostname()}-{os.getpid()}"


def run_worker(db: str | None = None, *, executor_id: str | None = None, concurrency: int | None = None,
               ready: Callable[[str], None] | None = None, stop: threading.Event | None = None,
               grace_s: float | None = None, recovered: Callable[[str, list[str]], None] | None = None,
               stopping: Callable[[int, float], None] | None = None) -> None:
    """Execute queued runs and recover dead executors' runs until SIGINT/SIGTERM (or ``stop`` is set), then stop
    gracefully (see the module). ``ready`` is told the database URL once the worker listens; ``recovered``
    ``(dead executor id, run ids)`` after each recovery; ``stopping`` ``(runs executing, grace seconds)`` when it
    begins to stop. ``concurrency``: most runs executed at once by this worker. ``grace_s``: default
    ``$LLAMABOT_DURABLE_GRACE_S``."""
    stop = stop or threading.Event()
    grace = grace_seconds() if grace_s is None else grace_s
    url = launch(db, executor_id=executor_id or worker_id(), worker_concurrency=concurrency, recover_orphans=True,
                 recovered=recovered)
    if threading.current_thread() is threading.main_thread():
        def on_signal(*_: object) -> None:
            if stop.is_set():
                DRAIN.hurry()  # a second signal: stop waiting for the steps in flight
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, on_signal)
    if ready is not None:
        ready(url)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        if stopping is not None:
            stopping(DRAIN.in_flight()[0], grace)
        shutdown(grace)

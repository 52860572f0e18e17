"""``llamabot worker``: a process that executes queued durable runs until it is stopped.

Any number of workers may share one PostgreSQL database; the queue hands each run to one of them. A worker
restarted with the same ``executor_id`` recovers the runs it had in flight (from their last completed step).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

from llamabot.durable.runtime import launch, shutdown


def run_worker(db: str | None = None, *, executor_id: str | None = None, concurrency: int | None = None,
               ready: Callable[[str], None] | None = None, stop: threading.Event | None = None) -> None:
    """Execute queued runs until SIGINT/SIGTERM (or ``stop`` is set). ``ready`` is told the database URL once
    the worker listens. ``concurrency``: most runs executed at once by this worker."""
    stop = stop or threading.Event()
    url = launch(db, executor_id=executor_id, worker_concurrency=concurrency)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
    if ready is not None:
        ready(url)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        shutdown()

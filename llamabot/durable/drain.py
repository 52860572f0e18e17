"""Draining a process: its durable runs stop at a step boundary and stay PENDING, never failed.

A process that stops (it exits, a worker gets SIGTERM, a service shuts down) must not record its runs in flight
as failed: DBOS records a workflow that raises an ``Exception`` as ERROR for good. :class:`Drain` is the gate
every step of every durable run of the process passes (:class:`~llamabot.durable.steps.DurableSteps`):

- while it is open, it counts the steps in flight (model calls, tool attempts) and the runs executing;
- :meth:`Drain.close` lets the steps in flight finish (their results are recorded) and ends every run at its next
  step with :class:`RunParked`, a ``BaseException`` that DBOS does not record: the run stays PENDING with all its
  completed steps, and the next process on the database (or a worker) goes on from there. A run waiting for an
  approval or in a retry backoff is parked at once (the wait itself is durable and starts again on recovery);
- :meth:`Drain.wait_idle` waits for the runs to be parked, up to a grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

#: Seconds :meth:`Drain.close` waits for the parked waits to reach their runs' callers (it takes a loop turn).
SETTLE_S = 5.0


class RunParked(BaseException):
    """The process executing a durable run is stopping: the run ends here without an outcome and stays PENDING
    in the database; the next process on the same database, or a worker, resumes it from its last completed step.

    A ``BaseException`` (like ``KeyboardInterrupt``), so that neither DBOS nor ``except Exception`` in a bot
    records it as the run's failure. ``Durable.run`` raises it in a thread that waits for a run when the process
    stops."""


class Drain:
    """The gate of one process's durable runs (thread-safe: runs and steps execute on event loops and threads)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._closed = False
        self._hurried = False
        # What is inside the gate: runs executing, steps in flight (a token each), durable waits (task -> its loop).
        self._runs: dict[object, None] = {}
        self._steps: dict[object, None] = {}
        self._waits: dict[asyncio.Task[Any], asyncio.AbstractEventLoop] = {}

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def hurried(self) -> bool:
        return self._hurried

    def open(self) -> None:
        """Let runs and steps start again (a runtime launched after a shutdown)."""
        with self._changed:
            self._closed = self._hurried = False

    def close(self, settle_s: float = SETTLE_S) -> None:
        """No new step starts; runs waiting for an approval or sleeping before a retry are parked now: this returns
        once their parking has reached whoever waits for those runs (at most ``settle_s`` seconds)."""
        with self._changed:
            self._closed = True
            waits = list(self._waits.items())
        for task, loop in waits:
            loop.call_soon_threadsafe(task.cancel)
        _settle(waits, settle_s)

    def hurry(self) -> None:
        """Stop :meth:`wait_idle` now (a second SIGTERM or Ctrl-C while the grace period runs)."""
        with self._changed:
            self._hurried = True
            self._changed.notify_all()

    def in_flight(self) -> tuple[int, int]:
        """``(runs executing, steps in flight)`` in this process."""
        return len(self._runs), len(self._steps)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no run executes here (all finished or parked), at most ``timeout`` seconds or until
        :meth:`hurry`; whether it is idle."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._runs and not self._hurried:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            return not self._runs

    def _parked(self, where: str) -> RunParked:
        return RunParked(f"the process is stopping: the durable run stays PENDING, {where}; the next process on its "
                         "database (or a worker) resumes it from its last completed step")

    def run(self) -> contextlib.AbstractContextManager[None]:
        """Around one execution of a run's workflow: counted; parked at once when the process is stopping. A run
        cancelled while the process stops (DBOS cancels what is left after the grace period) is parked too, so a
        cancellation is never recorded as its failure."""
        return self._held(self._runs, object(), None, "its first step")

    def step(self) -> contextlib.AbstractContextManager[None]:
        """Around one step (a model call, a tool attempt): refused with :class:`RunParked` once closed; a step
        that started runs to its end and is recorded."""
        return self._held(self._steps, object(), None, "its next step")

    def wait(self) -> contextlib.AbstractContextManager[None]:
        """Around a durable wait of a run on an event loop (an approval, a retry backoff): :meth:`close` ends it
        with :class:`RunParked`; the wait starts again when the run is recovered."""
        return self._held(self._waits, asyncio.current_task(), asyncio.get_running_loop(), "its wait")

    @contextlib.contextmanager
    def _held(self, held: dict[Any, Any], key: Any, value: Any, what: str) -> Iterator[None]:
        """``key`` is in ``held`` while the block runs; refused with :class:`RunParked` once closed, and a
        cancellation of the block while closed parks the run."""
        with self._changed:
            if self._closed:
                raise self._parked(f"before {what}")
            held[key] = value
        try:
            yield
        except asyncio.CancelledError:
            if self._closed:
                raise self._parked(f"in {what}") from None
            raise
        finally:
            with self._changed:
                del held[key]
                self._changed.notify_all()


def _settle(waits: list[tuple[asyncio.Task[Any], asyncio.AbstractEventLoop]], timeout: float) -> None:
    """Wait until the cancelled waits' tasks are done *and* their loops ran the callbacks the tasks scheduled as
    they ended. DBOS hands a workflow's result to the thread executing it in such a callback; a caller that stops the
    loop right after :meth:`Drain.close` (``DBOS.destroy``) dropped it, and that thread, one of a thread pool that
    Python joins at exit, waited forever: the process never exited."""
    deadline = time.monotonic() + timeout
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Task[Any]]] = {}
    for task, loop in waits:
        by_loop.setdefault(loop, []).append(task)
    for loop, tasks in by_loop.items():
        left = deadline - time.monotonic()
        if left <= 0 or loop.is_closed() or _running_loop() is loop:  # on that loop itself it cannot be waited for
            continue
        with contextlib.suppress(Exception):  # a loop that stopped or closed meanwhile: nothing is left to reach
            asyncio.run_coroutine_threadsafe(_ended(tasks), loop).result(left)


async def _ended(tasks: list[asyncio.Task[Any]]) -> None:
    await asyncio.wait(tasks)
    await asyncio.sleep(0)  # one more turn of the loop: the tasks' own done callbacks have run


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


#: The drain of this process (one DBOS runtime per process, see :mod:`llamabot.durable.runtime`).
DRAIN = Drain()

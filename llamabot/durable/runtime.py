"""The durable runtime of a process: one DBOS instance on one database, the run workflow, the run queue.

DBOS Transact is process-wide by design (one ``DBOS`` instance, workflows registered by name), so this is the
one deliberate piece of process-wide state of :mod:`llamabot.durable`: which database the process uses, its
queue, and the bots built from factory specs. Runs never share data through it: each run's state is its own
workflow's, and a bot instance keeps nothing per run.

The workflow :func:`durable_run` is registered once, at import, under :data:`WORKFLOW_NAME`; its inputs are the
factory spec, the query and the run options (stored by DBOS). Steps are recorded by
:class:`~llamabot.durable.steps.DurableSteps`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dbos import DBOS

from llamabot.durable.config import (
    APP_NAME,
    QUEUE_NAME,
    WORKFLOW_NAME,
    WORKFLOW_VERSION,
    grace_seconds,
    is_sqlite,
    redacted,
    resolve_db_url,
)
from llamabot.durable.database import CONNECT_TIMEOUT_S, check_reachable, sqlite_engine
from llamabot.durable.drain import DRAIN
from llamabot.durable.errors import (
    DatabaseUnreachableError,
    DurableError,
    DurableRuntimeError,
    NotStorableError,
)
from llamabot.durable.executors import Heartbeat, default_executor_id
from llamabot.durable.factory import BotCache
from llamabot.durable.serializer import SERIALIZER, refuse_pickle
from llamabot.durable.steps import DurableSteps
from llamabot.durable.traces import WRITER, recording
from llamabot.models.exchange import using_steps


class _Runtime:
    def __init__(self) -> None:
        self.url: str | None = None
        self.queue: Any = None
        self.heartbeat: Heartbeat | None = None
        self.exit_hook = False
        self.lock = threading.Lock()
        self.bots = BotCache()


_RUNTIME = _Runtime()
# How this process stores and reads everything of a durable run (the runtime and every client): JSON, with the
# classes of the bots this process built (their ``state_classes``) besides llamabot's own.
SERIALIZER.classes_from(_RUNTIME.bots.state_classes)


@DBOS.workflow(name=WORKFLOW_NAME)
async def durable_run(factory: str, query: Any, options: dict[str, Any]) -> Any:
    """One durable run: the bot built from ``factory`` answers ``query``; every model call, tool attempt and
    approval is a step. When the process stops, the run is parked at a step boundary and stays PENDING
    (:mod:`llamabot.durable.drain`)."""
    with DRAIN.run():
        bot = _RUNTIME.bots.bot_for(factory)
        with using_steps(DurableSteps()), recording(DBOS.workflow_id or "", factory, bot):
            result = await bot.arun(query, **options)
    try:  # checked here, so that the run fails with an error naming the result and the bot
        SERIALIZER.round_trip(result, "the run's result")
    except NotStorableError as exc:
        raise NotStorableError(
            f"the run's result ({type(result).__name__}, from {type(bot).__name__}) cannot be stored with the durable "
            f"run: {exc}. A graph's result must be data (str, numbers, lists, dicts, llamabot's dataclasses and "
            "models, or classes listed in the bot's state_classes)"
        ) from None
    return result


def launch(db: str | None = None, *, executor_id: str | None = None, worker_concurrency: int | None = None,
           dequeue: bool = True, recover_orphans: bool = False,
           recovered: Callable[[str, list[str]], None] | None = None) -> str:
    """Start the durable runtime on ``db`` (see :func:`~llamabot.durable.config.resolve_db_url`) unless it runs
    on it already; returns the URL. Runs this process started earlier and left unfinished (same
    ``executor_id``) are recovered in the background.

    ``executor_id``: this process's name in the database (default ``$DBOS__VMID``, else ``"local"``; give each
    process that runs at the same time as others its own). ``worker_concurrency``: most queued runs this process
    executes at once. ``dequeue=False``: this process enqueues but never executes queued runs (a front end in
    front of workers). ``recover_orphans``: this process also recovers the PENDING runs of executors that stopped
    heart-beating (:mod:`llamabot.durable.executors`; a worker does); ``recovered`` is told ``(dead executor id,
    run ids)`` after each recovery.

    The process records a heartbeat while the runtime runs. When it exits normally or on Ctrl-C, its runs in
    flight are never recorded as failed: the steps in flight get ``$LLAMABOT_DURABLE_GRACE_S`` seconds to finish,
    then the runs stay PENDING (see :func:`shutdown`).

    Raises :class:`DatabaseURLError` for a bad URL, ``TypeError``/``ValueError`` for a ``worker_concurrency``
    that is not a whole number of at least 1, :class:`DatabaseUnreachableError` when the database cannot
    be reached, :class:`DurableRuntimeError` when the process already uses another database,
    :class:`~llamabot.errors.SettingsError` for a bad heartbeat or grace setting.
    """
    url = resolve_db_url(db)
    _check_concurrency(worker_concurrency)
    with _RUNTIME.lock:
        if _RUNTIME.url == url:
            if recover_orphans and _RUNTIME.heartbeat is not None:
                _RUNTIME.heartbeat.recover, _RUNTIME.heartbeat.recovered = True, recovered
            return url
        if _RUNTIME.url is not None:
            raise DurableRuntimeError(
                f"this process already keeps durable runs in {redacted(_RUNTIME.url)}; one process uses one "
                f"database (call llamabot.durable.shutdown() before using {redacted(url)})"
            )
        check_reachable(url)
        grace_seconds()  # a bad setting fails now, not when the process exits
        executor_id = executor_id or default_executor_id()
        config: dict[str, Any] = {"name": APP_NAME, "system_database_url": url, "log_level": "WARNING",
                                  "application_version": WORKFLOW_VERSION, "serializer": SERIALIZER,
                                  "executor_id": executor_id}
        refuse_pickle()
        if is_sqlite(url):
            config["system_database_engine"] = sqlite_engine(url)
        else:
            config["db_engine_kwargs"] = {"connect_args": {"connect_timeout": CONNECT_TIMEOUT_S}}
        heartbeat = Heartbeat(url, executor_id, recover=recover_orphans, recovered=recovered)
        _off_the_loop(_begin, url, heartbeat)
        DRAIN.open()
        try:
            _RUNTIME.queue = _off_the_loop(_start_dbos, url, config, dequeue, worker_concurrency)
        except BaseException:
            heartbeat.end()
            raise
        heartbeat.run()
        WRITER.attach(url)  # the runs' traces, for the console (llamabot.durable.traces)
        _RUNTIME.url, _RUNTIME.heartbeat = url, heartbeat
        _register_exit_hook()
        return url


def _check_concurrency(worker_concurrency: Any) -> None:
    """``worker_concurrency`` is ``None`` (no limit) or a whole number of runs, at least 1: a process given 0 (or
    less) would enqueue runs and never execute one."""
    if worker_concurrency is None:
        return
    if type(worker_concurrency) is not int:
        raise TypeError(f"worker_concurrency must be a whole number of runs (at least 1) or None, got "
                        f"{type(worker_concurrency).__name__} {worker_concurrency!r}")
    if worker_concurrency < 1:
        raise ValueError(f"worker_concurrency must be at least 1 (the most queued runs this process executes at "
                         f"once), got {worker_concurrency}; use dequeue=False for a process that executes none")


def _begin(url: str, heartbeat: Heartbeat) -> None:
    try:
        if not is_sqlite(url):
            DBOS.migrate(url)  # creates the database if the server has none of that name (DBOS.launch would)
        heartbeat.begin()  # before DBOS.launch, whose start-up recovers this executor id's runs
    except DurableError:
        raise
    except Exception as exc:
        raise DatabaseUnreachableError(f"cannot start durable runs on {redacted(url)}: {exc}") from exc


def _register_exit_hook() -> None:
    """Shut the runtime down gracefully when the interpreter exits, *before* Python's thread pools refuse new
    work: an exit that stopped them first made every run in flight fail with "cannot schedule new futures after
    interpreter shutdown". ``threading._register_atexit`` is the hook ``concurrent.futures`` itself uses; hooks
    registered later run first. (``atexit`` handlers run after the pools are gone: too late.)"""
    if _RUNTIME.exit_hook:
        return
    register = getattr(threading, "_register_atexit", None)
    try:
        (register or __import__("atexit").register)(_at_exit)
    except RuntimeError:  # the interpreter is already exiting
        return
    _RUNTIME.exit_hook = True


def _at_exit() -> None:
    if _RUNTIME.url is not None:
        shutdown(grace_seconds())


def _start_dbos(url: str, config: dict[str, Any], dequeue: bool, worker_concurrency: int | None) -> Any:
    DBOS(config=config)  # type: ignore[arg-type]
    try:
        if not dequeue:
            DBOS.listen_queues([])
        DBOS.launch()
    except Exception as exc:
        DBOS.destroy()
        raise DatabaseUnreachableError(f"cannot start durable runs on {redacted(url)}: {exc}") from exc
    finally:
        logging.getLogger("dbos").propagate = False  # a library leaves the root logger alone
    return DBOS.register_queue(QUEUE_NAME, worker_concurrency=worker_concurrency, polling_interval_sec=0.2)


def _off_the_loop(func: Any, *args: Any) -> Any:
    """Call ``func`` here, or in a helper thread when this thread runs an event loop (DBOS's sync API refuses
    to run on one; starting happens once per process, so the short block is acceptable)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return func(*args)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(func, *args).result()


def shutdown(grace_s: float = 0) -> None:
    """Stop the durable runtime of this process. A run in flight is never recorded as failed: DBOS stops
    dequeuing, the steps in flight get ``grace_s`` seconds to finish and be recorded, every run is parked at its
    next step (:class:`~llamabot.durable.drain.RunParked`) and stays PENDING, and the process is marked stopped so
    that a worker recovers them at once (or this executor id when it starts again). With ``grace_s=0`` the steps
    in flight are cut: they run again when the run is recovered (at least once). Called on an event loop that
    executes runs, it blocks them: use :func:`ashutdown` there."""
    with _RUNTIME.lock:
        if _RUNTIME.url is not None:
            _off_the_loop(_stop, grace_s)
        _RUNTIME.url = _RUNTIME.queue = _RUNTIME.heartbeat = None
        _RUNTIME.bots.clear()


async def ashutdown(grace_s: float = 0) -> None:
    """:func:`shutdown` from async code (a service's lifespan): in a worker thread, so that the runs executing on
    this event loop can finish their steps during the grace period."""
    await asyncio.to_thread(shutdown, grace_s)


def _stop(grace_s: float) -> None:
    if _RUNTIME.heartbeat is not None:
        _RUNTIME.heartbeat.recover = False  # no more recoveries; the heartbeat goes on while the steps finish
    DRAIN.close()
    if grace_s > 0 and not DRAIN.wait_idle(0):
        # DBOS stops dequeuing at once and waits for its workflows (in 1 s ticks); the drain says when they are
        # all parked or finished. A daemon thread: a second signal (Drain.hurry) does not wait for it.
        stopping = threading.Thread(target=DBOS.destroy, name="llamabot-shutdown", daemon=True,
                                    kwargs={"workflow_completion_timeout_sec": math.ceil(grace_s)})
        stopping.start()
        DRAIN.wait_idle(grace_s)
        if not DRAIN.hurried:
            stopping.join()
    else:
        DBOS.destroy()
    WRITER.close()  # the last rows of the runs' traces
    if _RUNTIME.heartbeat is not None:
        _RUNTIME.heartbeat.end()


def active_url() -> str:
    """The database of the running durable runtime; :class:`DurableRuntimeError` when none runs."""
    url = _RUNTIME.url
    if url is None:
        raise DurableRuntimeError("durable runs are not started in this process: create a Durable(...) first")
    return url

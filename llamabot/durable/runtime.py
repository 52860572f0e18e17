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
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import sqlalchemy as sa
from dbos import DBOS

from llamabot.durable.config import APP_NAME, is_sqlite, redacted, resolve_db_url
from llamabot.durable.errors import DatabaseUnreachableError, DurableRuntimeError, NotStorableError
from llamabot.durable.factory import BotCache
from llamabot.durable.serializer import SERIALIZER, refuse_pickle
from llamabot.durable.steps import DurableSteps
from llamabot.models.exchange import using_steps

WORKFLOW_NAME = "llamabot.run"
#: The queue runs are enqueued on (``Durable.enqueue``) and workers dequeue from.
QUEUE_NAME = "llamabot_runs"
#: Recorded with every run; only a process with the same version recovers a run. Change it when the sequence of
#: steps a run makes changes incompatibly.
WORKFLOW_VERSION = "llamabot-durable-2"  # 2: JSON records (1 pickled them)
#: Seconds to wait for a PostgreSQL server before calling it unreachable.
CONNECT_TIMEOUT_S = 5


class _Runtime:
    def __init__(self) -> None:
        self.url: str | None = None
        self.queue: Any = None
        self.lock = threading.Lock()
        self.bots = BotCache()


_RUNTIME = _Runtime()
# How this process stores and reads everything of a durable run (the runtime and every client): JSON, with the
# classes of the bots this process built (their ``state_classes``) besides llamabot's own.
SERIALIZER.classes_from(_RUNTIME.bots.state_classes)


@DBOS.workflow(name=WORKFLOW_NAME)
async def durable_run(factory: str, query: Any, options: dict[str, Any]) -> Any:
    """One durable run: the bot built from ``factory`` answers ``query``; every model call, tool attempt and
    approval is a step."""
    bot = _RUNTIME.bots.bot_for(factory)
    with using_steps(DurableSteps()):
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
           dequeue: bool = True) -> str:
    """Start the durable runtime on ``db`` (see :func:`~llamabot.durable.config.resolve_db_url`) unless it runs
    on it already; returns the URL. Runs this process started earlier and left unfinished (same
    ``executor_id``) are recovered in the background.

    ``executor_id``: this process's name in the database (default ``"local"``; give each worker its own).
    ``worker_concurrency``: most queued runs this process executes at once. ``dequeue=False``: this process
    enqueues but never executes queued runs (a front end in front of workers).

    Raises :class:`DatabaseURLError` for a bad URL, :class:`DatabaseUnreachableError` when the database cannot
    be reached, :class:`DurableRuntimeError` when the process already uses another database.
    """
    url = resolve_db_url(db)
    with _RUNTIME.lock:
        if _RUNTIME.url == url:
            return url
        if _RUNTIME.url is not None:
            raise DurableRuntimeError(
                f"this process already keeps durable runs in {redacted(_RUNTIME.url)}; one process uses one "
                f"database (call llamabot.durable.shutdown() before using {redacted(url)})"
            )
        check_reachable(url)
        config: dict[str, Any] = {"name": APP_NAME, "system_database_url": url, "log_level": "WARNING",
                                  "application_version": WORKFLOW_VERSION, "serializer": SERIALIZER}
        refuse_pickle()
        if executor_id:
            config["executor_id"] = executor_id
        if is_sqlite(url):
            config["system_database_engine"] = sqlite_engine(url)
        else:
            config["db_engine_kwargs"] = {"connect_args": {"connect_timeout": CONNECT_TIMEOUT_S}}
        _RUNTIME.queue = _off_the_loop(_start_dbos, url, config, dequeue, worker_concurrency)
        _RUNTIME.url = url
        return url


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


def shutdown() -> None:
    """Stop the durable runtime of this process (runs in flight stay in the database, to be recovered)."""
    with _RUNTIME.lock:
        if _RUNTIME.url is not None:
            _off_the_loop(DBOS.destroy)
        _RUNTIME.url = _RUNTIME.queue = None
        _RUNTIME.bots.clear()


def active_url() -> str:
    """The database of the running durable runtime; :class:`DurableRuntimeError` when none runs."""
    url = _RUNTIME.url
    if url is None:
        raise DurableRuntimeError("durable runs are not started in this process: create a Durable(...) first")
    return url


def sqlite_engine(url: str) -> sa.Engine:
    """The SQLite engine DBOS would make (IMMEDIATE transactions, a long busy timeout, foreign keys), in WAL mode
    with ``synchronous=NORMAL``: one fsync per checkpoint instead of several, readers never block the writer. A
    killed process loses nothing committed; only an OS crash or power loss can lose the last commits."""
    engine = sa.create_engine(url, connect_args={"check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _configure(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        dbapi_conn.isolation_level = "IMMEDIATE"

    return engine


def check_reachable(url: str) -> None:
    """Open (and close) one connection to ``url``; :class:`DatabaseUnreachableError` naming it when that fails."""
    if is_sqlite(url):
        engine = sa.create_engine(url)
    else:
        engine = sa.create_engine(sa.make_url(url).set(drivername="postgresql+psycopg"),
                                  connect_args={"connect_timeout": CONNECT_TIMEOUT_S})
    try:
        with engine.connect():
            pass
    except Exception as exc:
        if not is_sqlite(url) and "does not exist" in str(exc):
            return  # the server answers; DBOS creates the database
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnreachableError(f"cannot reach the durable-runs database {redacted(url)}: {first}") from None
    finally:
        engine.dispose()

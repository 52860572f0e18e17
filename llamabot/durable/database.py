"""The runs' database seen through SQLAlchemy: engines like DBOS's, a reachability check, llamabot's own tables,
and the database's clock.

DBOS owns its tables; llamabot keeps its own beside them (``llamabot_decisions``: who decided an approval;
``llamabot_executors`` and ``llamabot_recoveries``: which processes are alive, who recovers a dead one's runs).
Times that several machines compare are read from the database's clock (:func:`now_ms`), never from each
machine's own.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from llamabot.durable.config import is_sqlite, redacted
from llamabot.durable.errors import DatabaseUnreachableError

#: Seconds to wait for a PostgreSQL server before calling it unreachable.
CONNECT_TIMEOUT_S = 5


def engine_for(url: str) -> sa.Engine:
    """An engine on the runs' database: :func:`sqlite_engine` for SQLite, psycopg with a connect timeout for
    PostgreSQL."""
    if is_sqlite(url):
        return sqlite_engine(url)
    return sa.create_engine(sa.make_url(url).set(drivername="postgresql+psycopg"),
                            connect_args={"connect_timeout": CONNECT_TIMEOUT_S})


@contextlib.contextmanager
def engine_with(url: str, metadata: sa.MetaData) -> Iterator[sa.Engine]:
    """An engine on the runs' database (:func:`engine_for`) with ``metadata``'s tables, for the block."""
    engine = engine_for(url)
    try:
        create_tables(engine, metadata)
        yield engine
    finally:
        engine.dispose()


def create_tables(engine: sa.Engine, metadata: sa.MetaData) -> None:
    """Create ``metadata``'s tables unless they exist (another process creating them at the same moment is not
    an error)."""
    try:
        metadata.create_all(engine, checkfirst=True)
    except sa.exc.DBAPIError:  # PostgreSQL's catalog race: another process created them first
        missing = [t for t in metadata.tables if not sa.inspect(engine).has_table(t)]
        if missing:
            raise


def now_ms(engine: sa.Engine) -> Any:
    """The database's clock in milliseconds since the epoch, as a SQL expression."""
    if engine.dialect.name == "sqlite":
        return sa.cast((sa.func.julianday("now") - 2440587.5) * 86_400_000.0, sa.BigInteger)
    return sa.cast(sa.func.extract("epoch", sa.func.clock_timestamp()) * 1000, sa.BigInteger)


def sqlite_engine(url: str) -> sa.Engine:
    """The SQLite engine DBOS would make (IMMEDIATE transactions, a long busy timeout, foreign keys), in WAL mode
    with ``synchronous=NORMAL``: one fsync per checkpoint instead of several, readers never block the writer. A
    killed process loses nothing committed; only an OS crash or power loss can lose the last commits."""
    engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_S})

    @sa.event.listens_for(engine, "connect")
    def _configure(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # the busy timeout is the connection's (connect_args), set before this
        wal_mode(dbapi_conn)
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        dbapi_conn.isolation_level = "IMMEDIATE"

    return engine


#: How long a SQLite connection waits for another's lock before "database is locked".
SQLITE_BUSY_S = 30.0


def wal_mode(conn: Any, wait_s: float = SQLITE_BUSY_S) -> None:
    """Put the database in WAL mode unless it is already (the mode is kept in the file). Switching needs the file
    to itself: while other connections read it in rollback mode SQLite answers "database is locked" (or keeps the
    old mode), so the switch is tried again until ``wait_s`` has passed; then the error is raised."""
    deadline = time.monotonic() + wait_s
    while True:
        error = sqlite3.OperationalError(f"could not switch the database to WAL mode within {wait_s:g} s")
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            if str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower() == "wal":
                return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            error = exc
        if time.monotonic() >= deadline:
            raise error
        time.sleep(0.05)


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

"""Where durable runs are stored: a database URL, resolved once per process.

Precedence: the ``db`` argument, else ``$LLAMABOT_DB``, else a SQLite file ``runs.sqlite`` under the user's data
directory (``platformdirs.user_data_dir("llamabot")``; created on first use). Accepted URLs are DBOS's:
``sqlite:///path`` and ``postgresql://user:password@host:port/database`` (``postgres://`` too). A bare file path
is read as a SQLite file (``~`` expanded). A set but blank ``$LLAMABOT_DB`` is an error, not the default;
secrets (a password, ``?password=``...) never appear in error messages (:func:`redacted`).
"""

from __future__ import annotations

import os
from pathlib import Path

from llamabot.durable.errors import DatabaseURLError
from llamabot.errors import SettingsError
from llamabot.settings import expand_path, setting

#: The environment variable that names the database when no argument does.
DB_ENV = "LLAMABOT_DB"

#: The name DBOS records runs under (its "application name").
APP_NAME = "llamabot"
#: The name the run workflow is registered under.
WORKFLOW_NAME = "llamabot.run"
#: The queue runs are enqueued on (``Durable.enqueue``) and workers dequeue from; recovered runs go back on it.
QUEUE_NAME = "llamabot_runs"
#: Recorded with every run; only a process with the same version recovers a run. Change it when the sequence of
#: steps a run makes changes incompatibly.
WORKFLOW_VERSION = "llamabot-durable-2"  # 2: JSON records (1 pickled them)

#: Seconds a stopping process gives the steps in flight to finish (worker SIGTERM, service shutdown, process exit).
GRACE_ENV = "LLAMABOT_DURABLE_GRACE_S"
#: Seconds between two heartbeats of a process that runs durable runs.
HEARTBEAT_ENV = "LLAMABOT_DURABLE_HEARTBEAT_S"
#: Seconds without a heartbeat after which an executor is dead and a worker recovers its PENDING runs.
ORPHAN_ENV = "LLAMABOT_DURABLE_ORPHAN_S"

_SCHEMES = ("sqlite:///", "postgresql://", "postgres://", "postgresql+psycopg://")


def default_db_path() -> Path:
    """The SQLite file used when nothing else is given (its folder is created)."""
    import platformdirs

    folder = Path(platformdirs.user_data_dir("llamabot", appauthor=False))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "runs.sqlite"


def resolve_db_url(db: str | os.PathLike[str] | None = None) -> str:
    """The database URL to use: ``db``, else ``$LLAMABOT_DB``, else the default SQLite file.

    Raises :class:`DatabaseURLError` naming where the value came from (the argument or the variable) for an empty
    URL (a blank ``$LLAMABOT_DB`` too: unset it for the default), an unknown scheme (``mysql://``...), a
    PostgreSQL URL without a database name, an in-memory SQLite database (durable runs must outlive the process,
    and every connection would see its own empty one), or a ``~user`` path whose user does not exist.
    """
    source = "the db argument"
    if db is None:
        if DB_ENV not in os.environ:
            return f"sqlite:///{default_db_path()}"
        db, source = os.environ[DB_ENV], f"${DB_ENV}"
    text = os.fspath(db).strip()
    if not text:
        raise DatabaseURLError(
            f"{source} is empty; give sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE"
            + (f" (or unset {DB_ENV} for the default SQLite file)" if source.startswith("$") else "")
        )
    if "://" not in text:  # a plain path
        text = f"sqlite:///{_expanded(text, source).resolve()}"
    if not text.startswith(_SCHEMES):
        scheme = text.split("://", 1)[0]
        raise DatabaseURLError(
            f"{source}: {scheme}:// databases are not supported ({redacted(text)}); durable runs are stored in "
            "SQLite (sqlite:///PATH) or PostgreSQL (postgresql://USER@HOST:PORT/DATABASE)"
        )
    if text.startswith("sqlite:///"):
        path = text[len("sqlite:///"):]
        if not path:
            raise DatabaseURLError(f"{source}: {text!r} names no file; use sqlite:///PATH")
        if _in_memory(path):
            raise DatabaseURLError(
                f"{source}: {text!r} is an in-memory SQLite database, which durable runs cannot use (they must "
                "outlive the process, and each connection would see its own empty database); use sqlite:///PATH"
            )
        return text
    if not text.split("://", 1)[1].partition("/")[2].split("?", 1)[0]:
        raise DatabaseURLError(f"{source}: {redacted(text)} names no database; add /DATABASE after the host")
    return text


def _expanded(text: str, source: str) -> Path:
    try:
        return expand_path(text, source)
    except SettingsError as exc:
        raise DatabaseURLError(str(exc)) from None


def _in_memory(path: str) -> bool:
    """Whether the path of a ``sqlite:///`` URL names an in-memory database (``:memory:``, ``file::memory:``,
    ``mode=memory``)."""
    name, _, query = path.partition("?")
    return ":memory:" in name or "mode=memory" in query.replace(" ", "")


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def redacted(url: str) -> str:
    """``url`` without its secrets, for error messages: the password of ``user:password@`` and the value of every
    query parameter whose name says it holds one (``?password=``, ``sslpassword=``, ``token=``...)."""
    scheme, sep, rest = url.partition("://")
    head, question, query = rest.partition("?")
    credentials, at, host = head.rpartition("@")
    if at and ":" in credentials:
        head = f"{credentials.split(':', 1)[0]}:***@{host}"
    if query:
        query = "&".join(_redacted_parameter(p) for p in query.split("&"))
    return f"{scheme}{sep}{head}{question}{query}"


#: Words in a query parameter's name that mark its value as a secret.
_SECRET_WORDS = ("pass", "secret", "token", "key", "credential", "auth")


def _redacted_parameter(parameter: str) -> str:
    name, eq, value = parameter.partition("=")
    if eq and value and any(word in name.lower() for word in _SECRET_WORDS):
        return f"{name}=***"
    return parameter


def grace_seconds() -> int:
    """``$LLAMABOT_DURABLE_GRACE_S`` (default 20, 0 to 3600): how long a stopping process lets its steps in flight
    finish before it stops; kept under the 30 s a container platform usually waits after SIGTERM."""
    return setting(GRACE_ENV)


def liveness_seconds() -> tuple[int, int]:
    """``($LLAMABOT_DURABLE_HEARTBEAT_S, $LLAMABOT_DURABLE_ORPHAN_S)`` (defaults 5 and 60): how often a process
    records that it is alive, and after how long without a heartbeat its runs are recovered by a worker. The
    timeout must be at least twice the heartbeat (:class:`SettingsError` otherwise), so one late heartbeat never
    makes a live process look dead."""
    heartbeat, orphan = setting(HEARTBEAT_ENV), setting(ORPHAN_ENV)
    if orphan < 2 * heartbeat:
        raise SettingsError(
            f"${ORPHAN_ENV}={orphan} must be at least twice ${HEARTBEAT_ENV}={heartbeat} (one late heartbeat must "
            "not make a live process look dead); raise the timeout or shorten the heartbeat"
        )
    return heartbeat, orphan

"""Where durable runs are stored: a database URL, resolved once per process.

Precedence: the ``db`` argument, else ``$LLAMABOT_DB``, else a SQLite file ``runs.sqlite`` under the user's data
directory (``platformdirs.user_data_dir("llamabot")``; created on first use). Accepted URLs are DBOS's:
``sqlite:///path`` and ``postgresql://user:password@host:port/database`` (``postgres://`` too). A bare file path
is read as a SQLite file.
"""

from __future__ import annotations

import os
from pathlib import Path

from llamabot.durable.errors import DatabaseURLError

#: The environment variable that names the database when no argument does.
DB_ENV = "LLAMABOT_DB"

#: The name DBOS records runs under (its "application name").
APP_NAME = "llamabot"

_SCHEMES = ("sqlite:///", "postgresql://", "postgres://", "postgresql+psycopg://")


def default_db_path() -> Path:
    """The SQLite file used when nothing else is given (its folder is created)."""
    import platformdirs

    folder = Path(platformdirs.user_data_dir("llamabot", appauthor=False))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "runs.sqlite"


def resolve_db_url(db: str | os.PathLike[str] | None = None) -> str:
    """The database URL to use: ``db``, else ``$LLAMABOT_DB``, else the default SQLite file.

    Raises :class:`DatabaseURLError` for an empty URL, an unknown scheme (``mysql://``...), or a PostgreSQL URL
    without a database name.
    """
    source = "the db argument"
    if db is None:
        db, source = os.environ.get(DB_ENV, "").strip() or None, f"${DB_ENV}"
    if db is None:
        return f"sqlite:///{default_db_path()}"
    text = os.fspath(db).strip()
    if not text:
        raise DatabaseURLError(f"{source} is empty; give sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE")
    if "://" not in text:  # a plain path
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    if not text.startswith(_SCHEMES):
        scheme = text.split("://", 1)[0]
        raise DatabaseURLError(
            f"{source}: {scheme}:// databases are not supported ({redacted(text)}); durable runs are stored in "
            "SQLite (sqlite:///PATH) or PostgreSQL (postgresql://USER@HOST:PORT/DATABASE)"
        )
    if text.startswith("sqlite:///"):
        if not text[len("sqlite:///"):]:
            raise DatabaseURLError(f"{source}: {text!r} names no file; use sqlite:///PATH")
        return text
    if not text.split("://", 1)[1].partition("/")[2].split("?", 1)[0]:
        raise DatabaseURLError(f"{source}: {redacted(text)} names no database; add /DATABASE after the host")
    return text


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def redacted(url: str) -> str:
    """``url`` without its password (error messages must not leak it)."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    return f"{scheme}{sep}{credentials.split(':', 1)[0]}:***@{host}"



"""``llamabot console``: durable runs in the browser (``pip install "llamabot[console]"``).

A FastAPI app with server-rendered pages on the runs' database: the runs list, one run's question, answer and
trace (live while it runs), pending approvals decided with the same functions as ``llamabot runs
approve|reject``, and the bot's graph. Loopback only unless a token is set. See ``docs/design/console/LLD.md``.

    from llamabot.console import create_app, serve
    serve(db="sqlite:///runs.sqlite", port=8000)          # blocks; what `llamabot console` does
"""

from __future__ import annotations

from collections.abc import Callable

from llamabot.console.app import create_app
from llamabot.console.security import ConsoleSecurityError, check_bind

__all__ = ["ConsoleSecurityError", "create_app", "serve"]


def serve(db: str | None = None, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
          ready: Callable[[str], None] | None = None) -> None:
    """Serve the console until interrupted. :class:`ConsoleSecurityError` for a non-loopback ``host`` without
    ``token``; :class:`~llamabot.durable.DatabaseUnreachableError` when the database cannot be opened. ``ready``
    is told the console's address once the app is built (before uvicorn starts listening)."""
    import uvicorn

    check_bind(host, token)
    app = create_app(db, token=token)
    shown = f"[{host}]" if ":" in host else host
    if ready is not None:
        ready(f"http://{shown}:{port}/")
    # open event streams end within 3 s of Ctrl-C / SIGTERM (uvicorn would wait for them forever)
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3)

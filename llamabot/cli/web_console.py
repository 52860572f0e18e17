"""``llamabot console``: the run console in the browser (needs the ``console`` extra; imported
when the command runs, so ``llamabot --help`` stays light)."""

from __future__ import annotations

import os
from typing import Optional

import typer
from rich.console import Console

err_console = Console(stderr=True)


def console(db: Optional[str] = typer.Option(None, "--db", help="Database URL of the durable runs (default: "  # noqa: UP045
                                             "$LLAMABOT_DB, else the SQLite file under the user's data directory)."),
            host: str = typer.Option("127.0.0.1", "--host", help="Address to bind; any other than a loopback "
                                     "address needs a token."),
            port: int = typer.Option(8000, "--port", help="Port to listen on."),
            token: Optional[str] = typer.Option(None, "--token", envvar="LLAMABOT_CONSOLE_TOKEN",  # noqa: UP045
                                                help="Every request must carry it (open the console once with "
                                                "?token=...; default: $LLAMABOT_CONSOLE_TOKEN).")) -> None:
    """Serve the run console: runs, their traces (live while they run), pending approvals to approve, edit or
    reject, and each bot's graph. Binds 127.0.0.1 unless told otherwise, with a token."""
    try:
        from llamabot.console import ConsoleSecurityError, serve
        from llamabot.durable import DurableError
    except ImportError as exc:
        err_console.print(f'error: the console needs its extra: pip install "llamabot[console]" ({exc})',
                          markup=False, highlight=False)
        raise typer.Exit(1) from exc

    def ready(url: str) -> None:
        hint = " (open it once with ?token=<your token>)" if token else ""
        err_console.print(f"llamabot console on {url}{hint}", markup=False, highlight=False)

    try:
        serve(db, host=host, port=port, token=token or os.environ.get("LLAMABOT_CONSOLE_TOKEN"), ready=ready)
    except ConsoleSecurityError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from exc
    except DurableError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from exc


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``console`` to the main app."""
    app.command("console")(console)

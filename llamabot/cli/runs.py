"""``llamabot runs list | show ID | approve ID | reject ID`` and ``llamabot worker``: durable runs from the shell.

Needs the ``durable`` extra; the commands import it when they run, so ``llamabot --help`` stays light.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

runs_app = typer.Typer(help="Durable runs (the durable extra): list, inspect, approve or reject waiting tool calls.")
console = Console()
err_console = Console(stderr=True)

DB_OPTION = typer.Option(None, "--db", help="Database URL (default: $LLAMABOT_DB, else a SQLite file under the "
                                            "user's data directory); postgresql://... for many workers.")


BY_OPTION = typer.Option(None, "--by", help="Who decides, recorded with the decision (default: user@host).")


def _durable() -> Any:
    try:
        import llamabot.durable as durable
    except ImportError as exc:
        err_console.print(f'[red]error:[/red] durable runs need the extra: pip install "llamabot[durable]" ({exc})')
        raise typer.Exit(1) from exc
    return durable


def _fail(exc: Exception) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {exc}", highlight=False)
    return typer.Exit(1)


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@runs_app.command("list")
def runs_list(db: Optional[str] = DB_OPTION,  # noqa: UP045 (typer needs Optional on 3.10)
              status: Optional[str] = typer.Option(None, help="Only runs with this status (PENDING, SUCCESS...)."),  # noqa: UP045
              limit: int = typer.Option(50, help="At most this many runs, newest first.")) -> None:
    """The most recent durable runs; WAITING marks runs that wait for an approval."""
    durable = _durable()
    try:
        found = durable.list_runs(db, status=status, limit=limit)
    except durable.DurableError as exc:
        raise _fail(exc) from exc
    table = Table("run id", "status", "query", "bot")
    for run in found:
        state = f"WAITING ({run.waiting['tool']})" if run.waiting else run.status
        table.add_row(run.run_id, state, _short(run.query), run.factory or "")
    console.print(table)


@runs_app.command("show")
def runs_show(run_id: str = typer.Argument(..., help="The run id."), db: Optional[str] = DB_OPTION) -> None:  # noqa: UP045
    """One run: status, query, result or error, the approval it waits for, and its completed steps."""
    durable = _durable()
    try:
        run = durable.show_run(run_id, db)
    except durable.DurableError as exc:
        raise _fail(exc) from exc
    console.print(f"run {run.run_id}: {run.status} (bot {run.factory}, executor {run.executor})", highlight=False)
    console.print(f"query: {_short(run.query, 500)}", markup=False, highlight=False)
    if run.waiting:
        console.print(f"WAITING for approval #{run.waiting['request']}: {run.waiting['tool']}"
                      f"({json.dumps(run.waiting['arguments'])})", markup=False, highlight=False)
    if run.status == "SUCCESS":
        console.print(f"result: {_short(run.result, 2000)}", markup=False, highlight=False)
    if run.error:
        console.print(f"error: {run.error}", markup=False, highlight=False)
    for number, name in run.steps:
        console.print(f"  step {number}: {name}", markup=False, highlight=False)


@runs_app.command("approve")
def runs_approve(run_id: str = typer.Argument(..., help="The run id."),
                 arguments: Optional[str] = typer.Option(None, "--arguments", help="Edited tool arguments (a JSON object)."),  # noqa: UP045
                 db: Optional[str] = DB_OPTION, by: Optional[str] = BY_OPTION) -> None:  # noqa: UP045
    """Let the waiting tool call run (with its own arguments, or edited ones). The first decision wins: a run
    someone decided already is refused (exit 1), naming that decision."""
    durable = _durable()
    try:
        edited = None if arguments is None else json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"--arguments is not JSON: {exc}") from exc
    try:
        pending = durable.approve(run_id, edited, db, by=by)
    except durable.DurableError as exc:
        raise _fail(exc) from exc
    console.print(f"approved {pending['tool']} for run {run_id}", highlight=False)


@runs_app.command("reject")
def runs_reject(run_id: str = typer.Argument(..., help="The run id."),
                reason: str = typer.Option("", "--reason", help="Why (shown to the model)."),
                db: Optional[str] = DB_OPTION, by: Optional[str] = BY_OPTION) -> None:  # noqa: UP045
    """Refuse the waiting tool call; the model is shown the rejection and the reason. The first decision wins,
    as for approve."""
    durable = _durable()
    try:
        pending = durable.reject(run_id, reason, db, by=by)
    except durable.DurableError as exc:
        raise _fail(exc) from exc
    console.print(f"rejected {pending['tool']} for run {run_id}", highlight=False)


def worker(db: Optional[str] = DB_OPTION,  # noqa: UP045
           executor_id: Optional[str] = typer.Option(None, "--executor-id", help="This worker's name; restart it with "  # noqa: UP045
                                                     "the same name to recover its runs."),
           concurrency: Optional[int] = typer.Option(None, help="Most runs this worker executes at once."),  # noqa: UP045
           path: list[str] = typer.Option([], "--path", help="A folder to import bot factories from (repeatable).")) -> None:
    """Execute queued durable runs until stopped (Ctrl-C / SIGTERM)."""
    import sys

    sys.path[:0] = path
    durable = _durable()
    from llamabot.durable.config import redacted  # the URL's password is never printed
    try:
        durable.run_worker(db, executor_id=executor_id, concurrency=concurrency,
                           ready=lambda url: err_console.print(f"worker ready on {redacted(url)}", markup=False,
                                                                 highlight=False))
    except durable.DurableError as exc:
        raise _fail(exc) from exc


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``runs`` and ``worker`` to the main app."""
    app.add_typer(runs_app, name="runs")
    app.command("worker")(worker)

"""``llamabot runs list | show | approve | reject | cancel | resume`` and ``llamabot worker``: durable runs from
the shell.

Needs the ``durable`` extra; the commands import it when they run, so ``llamabot --help`` stays light.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

runs_app = typer.Typer(help="Durable runs (the durable extra): list, inspect, approve or reject waiting tool calls, "
                            "cancel or resume runs.")
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


def _durably(name: str, *args: Any, **kwargs: Any) -> Any:
    """``llamabot.durable.<name>(*args, **kwargs)``; a typed durable error is printed and exits 1."""
    durable = _durable()
    try:
        return getattr(durable, name)(*args, **kwargs)
    except durable.DurableError as exc:
        raise _fail(exc) from exc


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_DURATION = re.compile(r"(\d+)([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def parse_age(text: str) -> float:
    """``90s``, ``10m``, ``2h``, ``1d``, ``1h30m`` as seconds; :class:`typer.BadParameter` otherwise."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise typer.BadParameter(f"{text!r} is not an age; write it like 90s, 10m, 2h, 1d or 1h30m")
    return float(sum(int(n) * _UNIT_S[u] for n, u in parts))


def _age(created_ms: int | None) -> str:
    if created_ms is None:
        return ""
    seconds = max(0, int(time.time() - created_ms / 1000))
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


@runs_app.command("list")
def runs_list(db: Optional[str] = DB_OPTION,  # noqa: UP045 (typer needs Optional on 3.10)
              status: list[str] = typer.Option([], "--status", help="Only runs with this status (repeatable): "
                                               "ENQUEUED, PENDING, WAITING, SUCCESS, ERROR, CANCELLED."),
              older_than: Optional[str] = typer.Option(None, "--older-than", help="Only runs started longer ago "  # noqa: UP045
                                                       "than this: 90s, 10m, 2h, 1d, 1h30m."),
              limit: int = typer.Option(50, help="At most this many runs, newest first.")) -> None:
    """The most recent durable runs; WAITING marks runs that wait for an approval. --status PENDING --older-than
    10m finds runs that may be stuck (llamabot runs resume ID recovers one now)."""
    durable = _durable()
    wanted = [part.strip() for option in status for part in option.split(",") if part.strip()]
    age = None if older_than is None else parse_age(older_than)
    try:
        found = durable.list_runs(db, status=wanted or None, older_than=age, limit=limit)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--status") from exc
    except durable.DurableError as exc:
        raise _fail(exc) from exc
    rows = [(run.run_id, f"WAITING ({run.waiting['tool']})" if run.waiting else run.status, _age(run.created_ms),
             _short(run.query), run.factory or "", run.executor or "") for run in found]
    table = Table()
    for i, name in enumerate(("run id", "status", "age")):  # never cut: the columns read first
        table.add_column(name, no_wrap=True, min_width=max([len(name), *(len(row[i]) for row in rows)]))
    for name in ("query", "bot", "executor"):
        table.add_column(name, overflow="ellipsis", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    console.print(table)


@runs_app.command("cancel")
def runs_cancel(run_id: str = typer.Argument(..., help="The run id."), db: Optional[str] = DB_OPTION) -> None:  # noqa: UP045
    """Cancel a run that is queued, in flight or waiting for an approval: it stops at its next step and is never
    recovered. A finished or cancelled run is refused (exit 1)."""
    run = _durably("cancel", run_id, db)
    console.print(f"cancelled run {run_id} ({run.status})", highlight=False)


@runs_app.command("resume")
def runs_resume(run_id: str = typer.Argument(..., help="The run id."), db: Optional[str] = DB_OPTION,  # noqa: UP045
                force: bool = typer.Option(False, "--force", help="Take over a run whose executor still "
                                           "heart-beats (its step in flight may run twice).")) -> None:
    """Recover a run now: a PENDING run whose executor is gone (without waiting for the orphan timeout), or a
    cancelled run. It goes back on the queue; a worker goes on from its last completed step. A finished run, a
    queued one, or one in flight on a live executor is refused (exit 1)."""
    run = _durably("resume", run_id, db, force=force)
    console.print(f"resumed run {run_id} ({run.status}): a worker on this database goes on from its last "
                  "completed step", highlight=False)


@runs_app.command("show")
def runs_show(run_id: str = typer.Argument(..., help="The run id."), db: Optional[str] = DB_OPTION) -> None:  # noqa: UP045
    """One run: status, query, whether its executor is alive (PENDING runs), result or error, the approval it
    waits for, and its completed steps."""
    from llamabot.durable.config import liveness_seconds
    run = _durably("show_run", run_id, db)
    console.print(f"run {run.run_id}: {run.status} (bot {run.factory}, executor {run.executor})", highlight=False)
    console.print(f"query: {_short(run.query, 500)}", markup=False, highlight=False)
    if run.executor_silent_s is not None:
        _, orphan_s = liveness_seconds()
        console.print(f"executor {run.executor}: heartbeat {run.executor_silent_s:.0f} s ago" if
                      run.executor_silent_s < orphan_s else
                      f"executor {run.executor} is gone (no heartbeat for {orphan_s} s or more): a worker recovers "
                      f"the run, or `llamabot runs resume {run.run_id}` now", markup=False, highlight=False)
    if run.waiting:
        console.print(f"WAITING for approval #{run.waiting['request']}: {run.waiting['tool']}"
                      f"({json.dumps(run.waiting['arguments'])})", markup=False, highlight=False)
    if run.status == "SUCCESS":
        console.print(f"result: {_short(run.result, 2000)}", markup=False, highlight=False)
    if run.error:
        console.print(f"error: {run.error}", markup=False, highlight=False)
    for number, name in run.steps:
        console.print(f"  step {number}: {name}", markup=False, highlight=False)


REQUEST_OPTION = typer.Option(None, "--request", min=1, help="The approval number this decision answers (as "
                                                              "`runs show` prints it); a run that waits for "
                                                              "another one is refused (exit 1).")


@runs_app.command("approve")
def runs_approve(run_id: str = typer.Argument(..., help="The run id."),
                 arguments: Optional[str] = typer.Option(None, "--arguments", help="Edited tool arguments (a JSON object)."),  # noqa: UP045
                 db: Optional[str] = DB_OPTION, by: Optional[str] = BY_OPTION,  # noqa: UP045
                 request: Optional[int] = REQUEST_OPTION) -> None:  # noqa: UP045
    """Let the waiting tool call run (with its own arguments, or edited ones). The first decision wins: a run
    someone decided already is refused (exit 1), naming that decision."""
    try:
        edited = None if arguments is None else json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"--arguments is not JSON: {exc}") from exc
    pending = _durably("approve", run_id, edited, db, by=by, request=request)
    console.print(f"approved {pending['tool']} for run {run_id} (approval #{pending['request']})", highlight=False)


@runs_app.command("reject")
def runs_reject(run_id: str = typer.Argument(..., help="The run id."),
                reason: str = typer.Option("", "--reason", help="Why (shown to the model)."),
                db: Optional[str] = DB_OPTION, by: Optional[str] = BY_OPTION,  # noqa: UP045
                request: Optional[int] = REQUEST_OPTION) -> None:  # noqa: UP045
    """Refuse the waiting tool call; the model is shown the rejection and the reason. The first decision wins,
    as for approve."""
    pending = _durably("reject", run_id, reason, db, by=by, request=request)
    console.print(f"rejected {pending['tool']} for run {run_id} (approval #{pending['request']})", highlight=False)


def worker(db: Optional[str] = DB_OPTION,  # noqa: UP045
           executor_id: Optional[str] = typer.Option(None, "--executor-id", help="This worker's name (default: "  # noqa: UP045
                                                     "$DBOS__VMID, else host-pid); restart it with the same name to "
                                                     "recover its runs at once."),
           concurrency: Optional[int] = typer.Option(None, min=1, help="Most runs this worker executes at once."),  # noqa: UP045
           grace: Optional[int] = typer.Option(None, "--grace", help="Seconds the steps in flight get to finish "  # noqa: UP045
                                               "on SIGTERM (default: $LLAMABOT_DURABLE_GRACE_S, else 20)."),
           path: list[str] = typer.Option([], "--path", help="A folder to import bot factories from (repeatable).")) -> None:
    """Execute queued durable runs, and recover the runs of workers that stopped heart-beating, until stopped.

    On SIGTERM or Ctrl-C the worker stops dequeuing, lets the steps in flight finish within the grace period,
    leaves its other runs PENDING for the live workers and exits 0; a second signal stops waiting."""
    import sys

    sys.path[:0] = path
    durable = _durable()
    from loguru import logger

    from llamabot.durable.config import redacted  # the URL's password is never printed

    logger.enable("llamabot.durable")  # a worker says when its heartbeat fails or another process uses its id

    def say(text: str) -> None:
        err_console.print(text, markup=False, highlight=False)

    def recovered(executor: str, run_ids: list[str]) -> None:
        for run_id in run_ids:
            say(f"recovered run {run_id} of dead executor {executor}")

    try:
        durable.run_worker(db, executor_id=executor_id, concurrency=concurrency, grace_s=grace, recovered=recovered,
                           ready=lambda url: say(f"worker ready on {redacted(url)}"),
                           stopping=lambda runs, g: say(f"worker stopping: {runs} runs executing, grace {g:g} s"))
    except durable.DurableError as exc:
        raise _fail(exc) from exc
    say("worker stopped")


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``runs`` and ``worker`` to the main app."""
    app.add_typer(runs_app, name="runs")
    app.command("worker")(worker)

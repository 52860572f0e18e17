"""``llamabot eval run MODULE:BOT_FACTORY --dataset FILE --scorer exact|contains|number|game24|MODULE:FN``.

Evaluates any bot (:func:`llamabot.evals.evaluate`): ``MODULE:BOT_FACTORY`` names a function or class that builds
the bot (called with ``model=`` when ``--model`` is given), or a bot itself. Prints the table and the summary;
``--out`` writes the JSON report, ``--csv`` the rows, ``--log`` keeps every attempt as it ends (run again with
the same ``--log`` to resume). Only typer and rich are imported here at import time.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def _bot(spec: str, model: str | None) -> Any:
    from llamabot.evals.scorers import load_spec

    found = load_spec(spec, "bot factory")
    if inspect.isclass(found) or inspect.isfunction(found):
        return found(model=model) if model else found()
    if model:
        raise typer.BadParameter(f"{spec} is a bot, not a factory: --model cannot be given to it")
    return found


def eval_run(
    target: str = typer.Argument(..., help="MODULE:BOT_FACTORY (a function or class building the bot) or MODULE:BOT."),
    dataset: Path = typer.Option(..., "--dataset", exists=True, dir_okay=False, help="Cases: .json, .jsonl or .csv."),
    scorer: str = typer.Option("exact", "--scorer", help="exact, contains, number, game24 or MODULE:FN."),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Cases running at once."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="The first N cases."),  # noqa: UP045
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Passed to the factory as model=."),  # noqa: UP045
    log: Optional[Path] = typer.Option(None, "--log", help="Attempts log (JSON lines): resumes when it exists."),  # noqa: UP045
    out: Optional[Path] = typer.Option(None, "--out", help="Write the JSON report here."),  # noqa: UP045
    csv_path: Optional[Path] = typer.Option(None, "--csv", help="Write one CSV row per case here."),  # noqa: UP045
) -> None:
    """Evaluate any bot over a dataset with a scorer: a table, a JSON report, CSV rows, with provenance."""
    from llamabot.errors import LlamabotError
    from llamabot.evals import Dataset, evaluate

    try:
        cases = Dataset.load(dataset, limit=limit)
        bot = _bot(target, model)
        report = evaluate(bot, cases, scorer, concurrency=concurrency, log=log)
    except (LlamabotError, ValueError) as exc:  # a dataset, a spec, a log made differently
        err_console.print(f"error: {exc}", markup=False, highlight=False)
        raise typer.Exit(2) from exc
    console.print(report.table(), markup=False, highlight=False)
    if out is not None:
        report.write_json(out)
        console.print(f"report: {out}", markup=False, highlight=False)
    if csv_path is not None:
        csv_path.write_text(report.to_csv())


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``llamabot eval run``."""
    eval_app.command("run")(eval_run)

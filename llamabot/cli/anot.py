"""``llamabot anot`` (also ``llamabot eval anot``): evaluate ANoT and/or the CoT baseline on a dataset.

    llamabot anot --data DIR --limit N [--requests R01,R11] [--candidates 10] [--method anot|cot|both]
                  [--model M] [--debug 0-3] [--out report.json] [--seed S]

Shows a progress bar, a results table (request, gold, ranking, hit) and a summary (Hits@1..5, MRR, time,
calls and tokens per request); ``--out`` writes the JSON report with per-request, per-phase timings, calls and
tokens, rewritten after every request while the run goes (``"partial": true``) so an interrupted run keeps what
it finished. Only typer and rich are imported here at import time; the harness and models load when it runs.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

console = Console()
err_console = Console(stderr=True)
METHOD_CHOICES = ("anot", "cot", "both")


def _results_table(report: Any, names: list[str]) -> Table:
    table = Table(title=f"{report.method} on {report.dataset} ({report.candidates} candidates, model {report.model})")
    for column in ("request", "gold", "ranking (top 5)", "hit@1", "hit@5", "s", "prompt tok"):
        table.add_column(column, justify="right" if column in ("s", "prompt tok") else "left")
    for record in report.records:
        gold = f"{record.gold_position} ({names[record.gold_idx]})"
        ranking = ", ".join(str(p) for p in record.ranking[:5]) if record.ranking else "-"
        if record.failed:
            ranking = f"failed: {record.failed[:60]}"
        table.add_row(
            record.request_id, gold, ranking,
            "[green]yes[/green]" if record.hit(1) else "[red]no[/red]",
            "[green]yes[/green]" if record.hit(5) else "[red]no[/red]",
            f"{record.seconds:.1f}", str(record.prompt_tokens),
        )
    return table


def _summary_table(reports: list[Any]) -> Table:
    table = Table(title="Summary (means per request)")
    columns = ("method", "n", "Hits@1", "Hits@2", "Hits@3", "Hits@4", "Hits@5", "MRR", "s", "calls", "prompt tok", "errors")
    for column in columns:
        table.add_column(column, justify="left" if column == "method" else "right")
    for report in reports:
        s = report.summary()
        costs = (f"{s['seconds_per_request']:.1f}", f"{s['calls_per_request']:.1f}", f"{s['prompt_tokens_per_request']:.0f}")
        table.add_row(
            report.method, str(int(s["n"])), *(f"{s[f'hits@{k}']:.2f}" for k in range(1, 6)), f"{s['mrr']:.3f}",
            *costs, str(s["requests_with_errors"]),
        )
        for prefix, label in (("scores", "logic scores"), ("final", "final step")):
            if f"{prefix}_hits@1" in s:  # ANoT's two rankings of the same run (the row above is the one chosen)
                table.add_row(
                    f"{report.method} ({label})", str(int(s["n"])), *(f"{s[f'{prefix}_hits@{k}']:.2f}" for k in range(1, 6)),
                    f"{s[f'{prefix}_mrr']:.3f}", "", "", "", "",
                )
    return table


def anot(
    data: Path = typer.Option(..., "--data", help="A philly_cafes-format directory (restaurants, reviews, requests, groundtruth)."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="Evaluate the first N requests (default: all)."),  # noqa: UP045
    requests: Optional[str] = typer.Option(  # noqa: UP045
        None, "--requests", help="Comma-separated request ids to evaluate, in this order (default: all, in file order)."
    ),
    candidates: int = typer.Option(10, "--candidates", min=1, help="Items per request: the gold one plus others."),
    method: str = typer.Option("anot", "--method", help="anot, cot (the baseline) or both."),
    model: Optional[str] = typer.Option(  # noqa: UP045
        None, "--model", "-m", help="LiteLLM model string (default: $LLAMABOT_MODEL, else the embedded local model)."
    ),
    debug: Optional[int] = typer.Option(None, "--debug", min=0, max=3, help="0-3 (default: $ANOT_DEBUG, else 0)."),  # noqa: UP045
    out: Optional[Path] = typer.Option(None, "--out", help="Write the JSON report here."),  # noqa: UP045
    seed: int = typer.Option(0, "--seed", help="Seed of the candidate selection and shuffling."),
    concurrency: int = typer.Option(8, "--concurrency", min=1, help="ANoT phase 3: model calls at once per layer."),
    token_budget: int = typer.Option(5500, "--token-budget", min=100, help="CoT: tokens of item text in the prompt."),
    rank_by: str = typer.Option("scores", "--rank-by", help="ANoT: rank by the logic over the condition steps (scores) or by the final step's output (final)."),
) -> None:
    """Evaluate ANoT (and/or the CoT baseline) on a ranking dataset: Hits@1..5, MRR, time and tokens."""
    from llamabot.reasoning.anot.ranking import RANK_BY

    if rank_by not in RANK_BY:
        raise typer.BadParameter(f"--rank-by must be final or scores, got {rank_by!r}")
    if method not in METHOD_CHOICES:
        raise typer.BadParameter(f"--method must be one of {', '.join(METHOD_CHOICES)}, got {method!r}")
    from llamabot.errors import LlamabotError
    from llamabot.evals.anot.data import load_dataset
    from llamabot.evals.anot.harness import evaluate, select_requests
    from llamabot.evals.report_file import write_report
    from llamabot.reasoning.anot.debug import DebugLog

    request_ids = [r.strip() for r in requests.split(",") if r.strip()] if requests else None
    try:
        dataset = load_dataset(data)
        total = len(select_requests(dataset, request_ids, limit))
    except (LlamabotError, OSError, ValueError) as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    methods = ["anot", "cot"] if method == "both" else [method]
    names = [str(item.get("name", index)) for index, item in enumerate(dataset.items)]
    config = {
        "data": str(data), "limit": limit, "requests": request_ids, "candidates": candidates, "seed": seed,
        "methods": methods, "model": model, "rank_by": rank_by,
    }
    reports = []
    done: dict[str, list[Any]] = {}
    provenances: dict[str, Any] = {}  # per method, as each evaluation starts (so a partial report has them too)

    def record_done(name: str, record: Any) -> None:
        done.setdefault(name, []).append(record)
        if out is not None:  # keep what is finished, should the run be interrupted
            partial = {"config": config, "partial": True, "provenance": provenances,
                       "records": {m: [asdict(r) for r in rs] for m, rs in done.items()}}
            write_report(out, partial)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=False,
    ) as progress:
        log = DebugLog.resolve(debug, lambda line: progress.console.print(line, markup=False, highlight=False))
        for name in methods:
            task = progress.add_task(name, total=total)
            options: dict[str, Any] = (
                {"concurrency": concurrency, "rank_by": rank_by} if name == "anot" else {"token_budget": token_budget}
            )
            try:
                report = evaluate(
                    dataset, name, model, limit=limit, candidates=candidates, seed=seed, debug=log,
                    on_record=lambda record, task=task, name=name: (progress.advance(task), record_done(name, record)),
                    request_ids=request_ids, on_start=lambda started, name=name: provenances.update({name: started}),
                    **options,
                )
            except LlamabotError as exc:
                err_console.print(f"[red]error:[/red] {exc}")
                raise typer.Exit(1) from exc
            reports.append(report)
    for report in reports:
        console.print(_results_table(report, names))
    console.print(_summary_table(reports))
    config["model"] = reports[0].model if reports else model
    document: dict[str, Any] = {"config": config, "provenance": provenances,
                                "reports": {report.method: report.to_dict() for report in reports}}
    if len(reports) == 2:
        anot_tokens, cot_tokens = (r.summary()["prompt_tokens_per_request"] for r in reports)
        document["token_ratio"] = anot_tokens / cot_tokens if cot_tokens else None
        console.print(f"prompt tokens per request: anot {anot_tokens:.0f}, cot {cot_tokens:.0f}, ratio {document['token_ratio']}")
    if out is not None:
        write_report(out, document)
        console.print(f"report written to {out}")


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``llamabot anot`` and ``llamabot eval anot``."""
    app.command("anot")(anot)
    eval_app.command("anot")(anot)

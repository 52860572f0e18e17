"""CLI of the Atom of Thought pattern: ``llamabot aot`` and ``llamabot eval aot``.

Only typer and rich are imported here; the pattern and the model load inside the commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


def _print_record(record) -> None:  # noqa: ANN001
    table = Table(title="execution")
    for column in ("atom", "kind", "name", "inputs", "result", "status", "ms"):
        table.add_column(column)
    for layer in record.layers:
        for atom_id in layer:
            r = record.atoms[atom_id]
            shown = r.result if r.status != "failed" else r.error
            table.add_row(str(r.id), r.kind, r.name, json.dumps(r.inputs, default=str) if r.inputs is not None else "",
                          repr(shown), r.status, f"{r.duration_s * 1000:.2f}")
    console.print(table)


def aot(
    question: Optional[str] = typer.Argument(None, help="The question (omit with --replay)."),  # noqa: UP045
    model: Optional[str] = typer.Option(None, "--model", "-m", help="LiteLLM model string (default: embedded)."),  # noqa: UP045
    save: Optional[Path] = typer.Option(None, "--save", help="Write the plan and its execution record as JSON."),  # noqa: UP045
    replay: Optional[Path] = typer.Option(None, "--replay", help="Validate and execute a saved plan; no model."),  # noqa: UP045
    max_replans: int = typer.Option(2, help="Re-plans after validation errors."),
    max_execution_replans: int = typer.Option(1, min=0, help="Re-plans after an atom failed (the failure is shown)."),
    samples: int = typer.Option(1, min=1, help="Self-consistency: sample this many plans, run all, majority answer."),
    subquestions: bool = typer.Option(False, help="Plan as sub-questions: each atom says in words what it finds out."),
    expressions: Optional[bool] = typer.Option(  # noqa: UP045
        None, "--expressions/--no-expressions",
        help="Atoms compute arithmetic expressions with the calculate tool (default: on with the calculator tools, "
             "off with --tool or --subquestions).",
    ),
    reasoning: bool = typer.Option(True, help="The plan opens with what is asked and how it follows, in words."),
    temperature: Optional[float] = typer.Option(  # noqa: UP045
        None, help="Planner temperature (default: the model's, or 0.7 with --samples > 1)."
    ),
    tool_specs: list[str] = typer.Option([], "--tool", "-t", help="module:function tools (default: the calculator)."),
    decision_specs: list[str] = typer.Option(
        [], "--decision", "-d", help="module:function decision tools (e.g. llamabot.toolkits.decisions:DECISION_TOOLS)."
    ),
) -> None:
    """Atom of Thought: the model plans, a program validates and executes (calculator tools by default)."""
    from pydantic import ValidationError

    from llamabot.bot.options import settings_apart
    from llamabot.cli import load_cli_tools
    from llamabot.reasoning.aot import AoTBot, AtomExecutionError, PlanValidationError, replay_plan

    tools = load_cli_tools(tool_specs) if tool_specs else None
    decisions = load_cli_tools(decision_specs)
    try:
        if replay is not None:
            try:
                record = replay_plan(replay, tools, decisions)
            except (ValidationError, ValueError, OSError) as exc:
                if isinstance(exc, PlanValidationError):
                    raise
                err_console.print(f"[red]not a plan:[/red] {replay}: {exc}")
                raise typer.Exit(2) from exc
            console.print_json(record.plan.to_json())
            _print_record(record)
            if save is not None:
                record.to_json(save)
        else:
            if not question:
                raise typer.BadParameter("give a question, or --replay PLAN.json")
            try:
                bot = AoTBot(tools, model=model, decisions=decisions,
                             **settings_apart(_aot_options(max_replans, max_execution_replans, samples, temperature,
                                                           subquestions, expressions, reasoning)))
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from exc
            result = bot(question)
            for errors in result.plan_errors:
                err_console.print("[yellow]rejected plan:[/yellow] " + "; ".join(errors))
            for failure in result.execution_failures:
                err_console.print(f"[yellow]failed plan, re-planned:[/yellow] {escape(failure)}")
            if result.samples:
                answers = ", ".join(repr(s["answer"]) if s["error"] is None else "failed" for s in result.samples)
                err_console.print(f"samples: {answers}; {result.votes} votes for the answer", markup=False)
            console.print_json(result.plan.to_json())
            _print_record(result.record)
            record = result.record
            if save is not None:
                Path(save).write_text(json.dumps(result.to_dict(), indent=2, default=str))
    except PlanValidationError as exc:
        err_console.print(f"[red]invalid plan:[/red] {exc}")
        raise typer.Exit(2) from exc
    except AtomExecutionError as exc:
        _print_record(exc.record)
        err_console.print(f"[red]execution failed:[/red] {exc}")
        raise typer.Exit(3) from exc
    console.print(f"answer: {record.answer!r}", markup=False, highlight=False)


def eval_aot(
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="Dataset file."),
    dataset: str = typer.Option(..., "--dataset", help="multiarith | svamp | arith"),
    limit: Optional[int] = typer.Option(None, "--limit", help="First N problems."),  # noqa: UP045
    model: Optional[str] = typer.Option(None, "--model", "-m", help="LiteLLM model string (default: embedded)."),  # noqa: UP045
    tolerance: float = typer.Option(1e-4, help="Relative tolerance for a numeric answer."),
    out: Path = typer.Option(Path("aot_eval.json"), "--out",
                             help='JSON report path (rewritten after every attempt, "partial": true until the end).'),
    resume: bool = typer.Option(False, "--resume", help="Keep the attempts of the --out report (an interrupted run "
                                "of the same settings) and run only the rest."),
    methods: str = typer.Option("aot,direct,cot", help="Comma-separated: aot, direct (answer only), cot."),
    max_execution_replans: int = typer.Option(1, min=0, help="AoT: re-plans after an atom failed."),
    samples: int = typer.Option(1, min=1, help="AoT: sample this many plans, run all, majority answer."),
    subquestions: bool = typer.Option(False, help="AoT: plan as sub-questions, each atom's question in words first."),
    expressions: Optional[bool] = typer.Option(  # noqa: UP045
        None, "--expressions/--no-expressions",
        help="AoT: atoms compute arithmetic expressions with the calculate tool (default: on, off with --subquestions).",
    ),
    reasoning: bool = typer.Option(True, help="AoT: the plan opens with what is asked and how it follows, in words."),
    temperature: Optional[float] = typer.Option(None, help="AoT planner temperature (default: the model's, 0.7 with --samples > 1)."),  # noqa: UP045
) -> None:
    """Accuracy of AoT vs the same model answering directly, plan validity, re-plans, latency, tokens."""
    from rich.progress import Progress

    from llamabot.evals.aot import (
        evaluate,
        load_problems,
        report,
        resumed_attempts,
        run_provenance,
        summarise,
    )
    from llamabot.evals.aot_misses import miss_classes
    from llamabot.evals.report_file import write_report
    from llamabot.models.resolve import get_model

    try:
        problems = load_problems(dataset, path)[:limit]
    except (ValueError, KeyError, OSError) as exc:
        raise typer.BadParameter(str(exc)) from exc
    model_name = get_model(model).name
    chosen = tuple(m.strip() for m in methods.split(",") if m.strip())
    aot_options = _aot_options(2, max_execution_replans, samples, temperature, subquestions, expressions,
                               reasoning)
    try:
        started = run_provenance(model_name, chosen, aot_options)  # the code that runs, before it runs
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    kept: dict[str, dict[str, Any]] = {}
    if resume and out.exists():
        try:
            kept = resumed_attempts(json.loads(out.read_text()), started, problems, chosen, dataset=dataset,
                                    tolerance=tolerance)
        except (OSError, ValueError) as exc:  # unreadable JSON, or ResumeError: made differently
            err_console.print(f"[red]error:[/red] cannot resume from {escape(str(out))}: {escape(str(exc))}")
            raise typer.Exit(2) from exc
        console.print(f"resuming {out}: {sum(map(len, kept.values()))} attempts kept", markup=False, highlight=False)
    # what is finished, in problem order (kept attempts first): the partial report rewritten after each attempt
    done: dict[str, list[Any]] = {m: [kept[m][p.id] for p in problems if p.id in kept.get(m, {})] for m in chosen}

    def on_attempt(method: str, attempt: Any) -> None:
        """Advance the bar and rewrite the report with what is finished, should the run be interrupted."""
        progress.advance(task)
        done[method].append(attempt)
        finished = {m: summarise(m, a) for m, a in done.items()}
        write_report(out, {**report(finished, dataset=dataset, path=str(path), model=model_name,
                                    aot_options=aot_options, provenance=started, tolerance=tolerance),
                           "partial": True})

    with Progress(console=console) as progress:
        task = progress.add_task(f"{dataset} x {len(problems)}", total=len(problems) * len(chosen),
                                 completed=sum(map(len, done.values())))
        try:
            summaries = evaluate(problems, model, tolerance=tolerance, methods=chosen, aot_options=aot_options,
                                 on_attempt=on_attempt, resume=kept)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from exc
    table = Table(title=f"AoT vs baselines on {dataset} ({len(problems)} problems, {model_name})")
    for column in ("method", "accuracy", "plan validity", "re-plans", "exec re-plans", "parse failures", "errors",
                   "mean latency s", "mean tokens"):
        table.add_column(column)
    for s in summaries.values():
        validity = "-" if s.plan_validity_rate is None else f"{s.plan_validity_rate:.0%}"
        parse = "-" if s.plan_validity_rate is None else str(s.parse_failures)
        table.add_row(s.method, f"{s.accuracy:.1%} ({s.correct}/{s.total})", validity, str(s.replans),
                      str(s.execution_replans), parse, str(s.errors),
                      f"{s.mean_latency_s:.2f}", f"{s.mean_tokens:.0f}")
    console.print(table)
    document = report(summaries, dataset=dataset, path=str(path), model=model_name, aot_options=aot_options,
                      provenance=started, tolerance=tolerance)
    if "aot" in summaries:  # where the plans went wrong (heuristic classes, llamabot.evals.aot_misses)
        document["misses"] = {"aot": miss_classes(summaries["aot"].attempts, problems)}
        shown = ", ".join(f"{name} {count}" for name, count in document["misses"]["aot"].items()) or "none"
        console.print(f"AoT misses: {shown}", markup=False, highlight=False)
    write_report(out, {**document, "partial": False})
    console.print(f"report: {out}")


def _aot_options(max_replans: int, max_execution_replans: int, samples: int, temperature: float | None,
                 subquestions: bool = False, expressions: bool | None = None, reasoning: bool = True) -> dict:
    """``AoTBot`` keyword arguments from the command's options (``temperature`` only when given)."""
    options = {"max_replans": max_replans, "max_execution_replans": max_execution_replans, "samples": samples,
               "subquestions": subquestions, "reasoning": reasoning}
    if expressions is not None:  # else the bot's default
        options["expressions"] = expressions
    if temperature is not None:
        options["temperature"] = temperature
    return options


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    app.command("aot")(aot)
    eval_app.command("aot")(eval_aot)

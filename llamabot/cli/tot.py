"""``llamabot tot`` and ``llamabot eval tot``. Imports only typer and rich at start; the rest on first use.

- ``llamabot tot "4 9 10 13"``: search a Game-of-24 puzzle (or, with ``--game none``, any problem), showing the
  tree live, then the best solution and, for the game, whether the checker accepts it.
- ``llamabot eval tot --dataset game24 PATH --limit N``: ToT against the IO and CoT baselines on the same model:
  success rate, nodes explored, tokens and time, with a progress bar and an optional JSON report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console, Group
from rich.markup import escape
from rich.text import Text
from rich.tree import Tree

MODEL_OPTION = typer.Option(
    None, "--model", "-m", help="LiteLLM model string (default: $LLAMABOT_MODEL, else the embedded local model)."
)
STRATEGY_OPTION = typer.Option("best_first", "--strategy", help="Traversal: best_first, bfs or dfs.")
BEAM_OPTION = typer.Option(None, "--beam", help="Cap on the best-first frontier (beam_width).")
BRANCHING_OPTION = typer.Option(None, "--branching", "-b", min=1,
                                help="Thoughts asked for per expansion (default: 6 for the Game of 24, both steps of "
                                     "each of three pairs; 3 for other problems).")
DEPTH_OPTION = typer.Option(3, "--depth", "-d", help="Maximum depth of the tree (the game needs 3 steps).")
VERIFY_OPTION = typer.Option(False, "--verify", help="Game of 24: stop at the first path the checker accepts.")
DEEPER_OPTION = typer.Option(False, "--prefer-deeper/--no-prefer-deeper",
                             help="Best-first: among equal scores, expand the deeper node first.")
TRIES_OPTION = typer.Option(False, "--tries/--no-tries",
                            help="Game of 24: the evaluator writes the expression it tries before each score.")
RESULTS_OPTION = typer.Option(True, "--last-results/--no-last-results",
                              help="Game of 24: for a candidate that leaves two numbers, the evaluator writes their "
                                   "four results instead of a score (it scores 1 when one of them is 24).")
PAIRS_OPTION = typer.Option(True, "--pair-steps/--no-pair-steps",
                            help="Game of 24: with three numbers left, the model proposes two steps for each pair of "
                                 "them (one + or *, one - or /) instead of free proposals, where --branching keeps "
                                 "both steps of every pair (6 for three pairs, the default).")
FINISH_OPTION = typer.Option(True, "--finish-steps/--no-finish-steps",
                             help="Game of 24: with --last-results, a result the evaluator wrote that reaches 24 is "
                                  "also that candidate's last step (checked by the rules), so the search ends there "
                                  "without asking for the last step again.")
BRIEF_OPTION = typer.Option(False, "--brief/--no-brief",
                            help="Game of 24: the rules-only system prompt, with examples only in the turns that need "
                                 "them (half the tokens; on the 30 hard dev puzzles 17 solved against the full prompt's 18), instead of the full "
                                 "system prompt with worked examples.")
MAX_TOKENS_OPTION = typer.Option(512, "--max-tokens", help="Upper bound on each reply's length in tokens.")
MAX_CALLS_OPTION = typer.Option(None, "--max-calls", min=2, help="Model-call budget (generate, evaluate, repair).")
PARALLEL_OPTION = typer.Option(1, "--parallel", min=1,
                               help="Frontier nodes expanded side by side in each wave (their calls are sent together; "
                                    "the embedded model decodes them in one batch).")


def _score_style(score: float | None) -> str:
    if score is None:
        return "dim"
    return "green" if score >= 0.75 else "yellow" if score >= 0.4 else "red"


def tree_view(machine: Any, streaming: str = "", describe: Callable[[tuple[str, ...]], str] | None = None) -> Group:
    """A rich view of the search: the tree with scores (solution path starred, node being expanded marked),
    the text streaming in, and a status line. ``describe`` shows a node from its path of thoughts (the Game of
    24 shows each step with the numbers the game computed); without it, a node shows its thought as written."""
    from llamabot.reasoning.tot.machine import path_texts

    root_id = machine.root_id
    on_path = set(machine.solution_path)
    tree = Tree(Text(f"problem: {machine.prompt or ''}", style="bold"))

    def label(node: Any) -> Text:
        score = "?" if node.score is None else f"{node.score:.2f}"
        shown = describe(path_texts(machine, node.id)) if describe is not None else node.content
        text = Text(f"{'★ ' if node.id in on_path else ''}{shown} ", style="bold" if node.id in on_path else "")
        text.append(f"[{score}]", style=_score_style(node.score))
        expanding = next((e for e in machine.active if e.node_id == node.id), None)
        if expanding is not None:
            text.append(f"  ◀ {'generating' if expanding.phase == 'generation' else 'evaluating'}", style="cyan")
        if node.id in machine.closed_nodes:
            text.append("  (closed)", style="dim")
        if node.id in machine.continued_nodes:
            text.append("  (written by the evaluator)", style="dim")
        return text

    def add(branch: Tree, node_id: str) -> None:
        for child_id in machine.nodes[node_id].children:
            add(branch.add(label(machine.nodes[child_id])), child_id)

    if root_id is not None:
        add(tree, root_id)
    parts: list[Any] = [tree]
    if streaming:
        parts.append(Text(" ".join(streaming.split())[-160:], style="dim italic"))
    total = machine.usage.get("total_tokens", 0)
    parts.append(Text(f"{machine.status.value} · {len(machine.nodes)} nodes · {total} tokens", style="dim"))
    return Group(*parts)


def tot_command(
    problem: str = typer.Argument(..., help="Game of 24: four numbers, e.g. '4 9 10 13'; with --game none, any problem."),
    model: Optional[str] = MODEL_OPTION,  # noqa: UP045 (typer needs Optional on 3.10)
    game: str = typer.Option("game24", "--game", help="game24, or none for a free-form problem."),
    branching: Optional[int] = BRANCHING_OPTION,  # noqa: UP045
    depth: int = DEPTH_OPTION,
    strategy: str = STRATEGY_OPTION,
    beam: Optional[int] = BEAM_OPTION,  # noqa: UP045
    max_nodes: int = typer.Option(40, "--max-nodes", help="Hard cap on the nodes of the tree."),
    max_seconds: Optional[float] = typer.Option(None, "--max-seconds", help="Wall-time budget (off by default)."),  # noqa: UP045
    max_calls: Optional[int] = MAX_CALLS_OPTION,  # noqa: UP045
    parallel: int = PARALLEL_OPTION,
    verify: bool = VERIFY_OPTION,
    tries: bool = TRIES_OPTION,
    last_results: bool = RESULTS_OPTION,
    pair_steps: bool = PAIRS_OPTION,
    brief: bool = BRIEF_OPTION,
    finish_steps: bool = FINISH_OPTION,
    prefer_deeper: bool = DEEPER_OPTION,
    stream: bool = typer.Option(True, help="Show the model's text as it is generated."),
    mermaid: bool = typer.Option(False, "--mermaid", help="Also print the explored tree as mermaid."),
    max_tokens: int = MAX_TOKENS_OPTION,
) -> None:
    """Solve a problem with a Tree-of-Thoughts search, showing the tree live, then the best solution."""
    from rich.live import Live

    from llamabot.errors import LlamabotError
    from llamabot.evals.game24.check import PuzzleError, check_game24, parse_puzzle
    from llamabot.evals.game24.prompts import Game24Prompts, shown_path_step
    from llamabot.evals.game24.steps import is_solution_path
    from llamabot.reasoning.tot.graph import ToTBot
    from llamabot.reasoning.tot.prompts import ToTPrompts

    console, errors = Console(), Console(stderr=True)
    if game not in ("game24", "none"):
        raise typer.BadParameter(f"--game must be game24 or none, got {game!r}")
    is_game = game == "game24"
    if is_game:
        try:
            parse_puzzle(problem)
        except PuzzleError as exc:
            raise typer.BadParameter(str(exc)) from exc
    if branching is None:
        branching = 6 if is_game else 3
    options = {
        "branching_factor": branching, "max_depth": depth, "traversal_strategy": strategy, "beam_width": beam,
        "max_nodes": max_nodes, "max_duration_ms": max_seconds * 1000 if max_seconds else None,
        "max_model_calls": max_calls, "min_depth": depth if is_game else min(2, depth),
        "prefer_deeper": prefer_deeper, "parallel_expansions": parallel,
    }
    live = Live(console=console, refresh_per_second=8)
    state: dict[str, Any] = {"machine": None, "streamed": []}

    describe = partial(shown_path_step, problem) if is_game else None

    def on_step(machine: Any) -> None:
        state["machine"], state["streamed"] = machine, []
        live.update(tree_view(machine, describe=describe))

    def on_piece(piece: str) -> None:
        state["streamed"].append(piece)
        if state["machine"] is not None:
            live.update(tree_view(state["machine"], "".join(state["streamed"]), describe))

    try:
        bot = ToTBot(
            model=model,
            prompts=Game24Prompts(tries=tries, last_results=last_results, pair_steps=pair_steps, brief=brief,
                                  finish_steps=finish_steps)
            if is_game
            else ToTPrompts(),
            goal_test=is_solution_path if (is_game and verify) else None,
            stream_target=on_piece if stream else None, on_step=on_step, model_settings={"max_tokens": max_tokens},
            **options,
        )
        with live:
            result = bot(problem)
    except LlamabotError as exc:
        errors.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    if not console.is_terminal:
        console.print()  # a non-terminal Live leaves its last line open
    t = result.termination
    seconds = f"{t.duration_ms / 1000:.1f} s" if t.duration_ms is not None else "-"
    console.print(f"termination: {t.reason} · depth {t.depth_reached} · {t.node_count} nodes · "
                  f"{result.usage.get('total_tokens', 0)} tokens · {seconds}", markup=False, highlight=False)
    if t.status == "error":
        hint = " (if this model cannot stream, try --no-stream)" if stream else ""
        errors.print(f"[red]the search failed:[/red] {escape(str(result.diagnostics.get('error')))}{hint}")
        raise typer.Exit(1)
    console.print("best path:", markup=False)
    path = tuple(result.solution_text)
    for index, step in enumerate(path, 1):
        console.print(f"  {index}. {describe(path[:index]) if describe else step}", markup=False, highlight=False)
    if is_game:
        ok = result.answer is not None and check_game24(problem, result.answer)
        verdict = "correct" if ok else "wrong" if result.answer else "no complete expression"
        console.print(f"best solution: {result.answer or '-'}  check: {verdict}", markup=False, highlight=False)
    else:
        console.print(f"best solution: {result.answer or '-'}", markup=False, highlight=False)
    if mermaid:
        console.print(str(result.to_mermaid()), markup=False, highlight=False)


def eval_tot_command(
    path: Path = typer.Argument(..., help="The dataset file, e.g. ../shared/data/game24_dev.csv."),
    dataset: str = typer.Option("game24", "--dataset", help="The dataset kind (game24)."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="Use the first N puzzles."),  # noqa: UP045
    model: Optional[str] = MODEL_OPTION,  # noqa: UP045
    out: Optional[Path] = typer.Option(  # noqa: UP045
        None, "--out", "-o", help='Write the JSON report here (after every attempt, "partial": true until the end).'),
    resume: bool = typer.Option(False, "--resume", help="Keep the attempts of the --out report (an interrupted run "
                                "of the same settings) and run only the rest."),
    methods: str = typer.Option("io,cot,tot", "--methods", help="Comma-separated: io, cot, tot."),
    branching: int = typer.Option(6, "--branching", "-b", help="Thoughts asked for per expansion (6: with three "
                                  "numbers left, both steps of each of the three pairs)."),
    depth: int = DEPTH_OPTION,
    strategy: str = STRATEGY_OPTION,
    beam: Optional[int] = BEAM_OPTION,  # noqa: UP045
    max_nodes: int = typer.Option(45, "--max-nodes", help="Hard cap on each tree's nodes."),
    max_seconds: Optional[float] = typer.Option(  # noqa: UP045
        None, "--max-seconds", help="Wall-time budget of each ToT search (off by default: it depends on the machine)."
    ),
    max_calls: Optional[int] = typer.Option(14, "--max-calls", min=2, help="Model-call budget of each ToT search."),  # noqa: UP045
    parallel: int = PARALLEL_OPTION,
    verify: bool = VERIFY_OPTION,
    tries: bool = TRIES_OPTION,
    last_results: bool = RESULTS_OPTION,
    pair_steps: bool = PAIRS_OPTION,
    brief: bool = BRIEF_OPTION,
    finish_steps: bool = FINISH_OPTION,
    prefer_deeper: bool = DEEPER_OPTION,
    max_tokens: int = MAX_TOKENS_OPTION,
) -> None:
    """Evaluate ToT against IO and CoT baselines on the same model: success rate, nodes, tokens, time."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from llamabot.errors import LlamabotError
    from llamabot.evals.game24.prompts import Game24Prompts
    from llamabot.evals.tot import ResumeError, evaluate_game24, load_game24

    console, errors = Console(), Console(stderr=True)
    if dataset != "game24":
        raise typer.BadParameter(f"--dataset must be game24 (the only dataset so far), got {dataset!r}")
    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    try:
        puzzles = load_game24(path, limit)
    except LlamabotError as exc:
        errors.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    previous = None
    if resume:
        if out is None:
            raise typer.BadParameter("--resume needs --out: the report to resume and to go on writing")
        if out.exists():
            try:
                previous = json.loads(out.read_text())
            except (OSError, ValueError) as exc:
                errors.print(f"[red]error:[/red] cannot resume from {escape(str(out))}: {escape(str(exc))}")
                raise typer.Exit(2) from exc
    options = {"branching_factor": branching, "max_depth": depth, "min_depth": depth, "traversal_strategy": strategy,
               "beam_width": beam, "max_nodes": max_nodes, "max_model_calls": max_calls,
               "max_duration_ms": max_seconds * 1000 if max_seconds else None, "prefer_deeper": prefer_deeper,
               "parallel_expansions": parallel}
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console)
    task = progress.add_task("evaluating", total=len(puzzles) * len(chosen))

    def on_resume(kept: int) -> None:  # told once the report to resume passed its checks
        progress.console.print(f"resuming {out}: {kept} attempts kept", markup=False, highlight=False)
        progress.update(task, completed=kept)

    def on_attempt(a: Any) -> None:
        mark = "✓" if a.solved else "✗"
        progress.console.print(
            f"{a.method:>3} {a.puzzle:<12} {mark} {a.answer or '-'}  nodes {a.nodes}  "
            f"tokens {a.prompt_tokens + a.completion_tokens}  {a.seconds:.1f} s", markup=False, highlight=False)
        progress.update(task, advance=1, description=f"{a.method} {a.puzzle}")

    try:
        with progress:
            prompts = Game24Prompts(tries=tries, last_results=last_results, pair_steps=pair_steps, brief=brief,
                                    finish_steps=finish_steps)
            report = evaluate_game24(puzzles, model, methods=chosen, tot_options=options, verify=verify,
                                     prompts=prompts, dataset=str(path), on_attempt=on_attempt, max_tokens=max_tokens,
                                     checkpoint=partial(_write_report, out) if out is not None else None,
                                     resume=previous, on_resume=on_resume)
    except (LlamabotError, ValueError) as exc:
        errors.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2 if isinstance(exc, ResumeError) else 1) from exc
    table = Table(title=f"Game of 24 · {len(puzzles)} puzzles · {report.model}")
    for column in ("method", "solved", "success", "in tree", "nodes/puzzle", "calls", "tokens", "tokens/puzzle",
                   "time", "time/puzzle"):
        table.add_column(column)
    for s in report.summaries():
        in_tree = f"{s.solution_in_tree_rate:.0%}" if s.solution_in_tree_rate is not None else "-"
        table.add_row(s.method, f"{s.solved}/{s.puzzles}", f"{s.success_rate:.1%}", in_tree, f"{s.mean_nodes:.1f}",
                      str(s.model_calls), str(s.total_tokens), f"{s.mean_tokens:.0f}", f"{s.total_seconds:.1f} s",
                      f"{s.mean_seconds:.1f} s")
    console.print(table)
    if out is not None:
        _write_report(out, report)
        console.print(f"report written to {out}", markup=False, highlight=False)


def _write_report(out: Path, report: Any) -> None:
    """Write the evaluation's report (after every attempt, and at the end): :mod:`llamabot.evals.report_file`."""
    from llamabot.evals.report_file import write_report

    write_report(out, report.to_dict())


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``tot`` to the main app and ``tot`` to ``llamabot eval``."""
    app.command("tot")(tot_command)
    eval_app.command("tot")(eval_tot_command)

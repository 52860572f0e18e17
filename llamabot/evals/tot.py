"""Game-of-24 evaluation: Tree of Thoughts against the IO and CoT baselines, on the same model.

For each puzzle and method the harness records whether the answer checks (:func:`check_game24`), the nodes
explored (ToT: thought nodes, the root excluded; IO and CoT: one answer), the model calls, the tokens and the
wall time. ToT also records whether *any* explored path solves the puzzle (``solution_in_tree``: the search
found it, whether or not the evaluator ranked it first). Nothing here uses the checker to steer a search
unless ``verify=True`` is asked for (then ToT stops at the first verified path, which is no longer a fair
comparison, and the report says so).
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llamabot.errors import LlamabotError
from llamabot.evals.game24.check import PuzzleError, check_game24, parse_puzzle
from llamabot.evals.game24.prompts import (
    COT_PROMPT,
    GAME24_TOT_OPTIONS,
    IO_PROMPT,
    Game24Prompts,
    baseline_user,
    game24_prompts,
)
from llamabot.evals.game24.steps import extract_answer, is_solution_path
from llamabot.evals.provenance import ResumeError, check_resumable, provenance, provenance_differences
from llamabot.models.base import ChatModel
from llamabot.models.resolve import get_model
from llamabot.reasoning.tot.machine import path_texts

METHODS = ("io", "cot", "tot")



class DatasetError(LlamabotError, ValueError):
    """A dataset file that cannot be read as Game-of-24 puzzles; the message names the file and line."""


@dataclass(slots=True)
class Attempt:
    """One method on one puzzle."""

    puzzle: str
    method: str
    answer: str | None
    solved: bool
    nodes: int
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    termination: str | None = None
    solution_in_tree: bool | None = None
    error: str | None = None
    steps: list[str] | None = None  # ToT: the thoughts along the solution path


@dataclass(slots=True)
class MethodSummary:
    method: str
    puzzles: int
    solved: int
    success_rate: float
    mean_nodes: float
    model_calls: int
    total_tokens: int
    mean_tokens: float
    total_seconds: float
    mean_seconds: float
    solution_in_tree_rate: float | None = None


@dataclass(slots=True)
class EvalReport:
    """Every attempt of an evaluation, its configuration and its provenance (model, decoding settings per
    method, prompt versions, commit: :mod:`llamabot.evals.provenance`)."""

    model: str
    dataset: str
    config: dict[str, Any]
    attempts: list[Attempt] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    def summaries(self) -> list[MethodSummary]:
        """One summary per method, in the order the methods ran."""
        out = []
        for method in dict.fromkeys(a.method for a in self.attempts):
            rows = [a for a in self.attempts if a.method == method]
            n = len(rows)
            tokens = sum(a.prompt_tokens + a.completion_tokens for a in rows)
            seconds = sum(a.seconds for a in rows)
            in_tree = [a.solution_in_tree for a in rows if a.solution_in_tree is not None]
            out.append(MethodSummary(
                method=method, puzzles=n, solved=sum(a.solved for a in rows),
                success_rate=sum(a.solved for a in rows) / n, mean_nodes=sum(a.nodes for a in rows) / n,
                model_calls=sum(a.model_calls for a in rows), total_tokens=tokens, mean_tokens=tokens / n,
                total_seconds=seconds, mean_seconds=seconds / n,
                solution_in_tree_rate=sum(in_tree) / len(in_tree) if in_tree else None,
            ))
        return out

    @property
    def partial(self) -> bool:
        """Whether attempts are missing: the run is still going, or it was interrupted."""
        return len(self.attempts) < self.config.get("puzzles", 0) * len(self.config.get("methods", ()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "dataset": self.dataset,
            "config": self.config,
            "provenance": self.provenance,
            "partial": self.partial,
            "summary": [asdict(s) for s in self.summaries()],
            "attempts": [asdict(a) for a in self.attempts],
        }


def load_game24(path: str | Path, limit: int | None = None) -> list[str]:
    """Puzzles from a CSV with a ``Puzzles`` column (the ToT paper's ``24.csv``) or a file with one puzzle per
    line, in file order, at most ``limit``. Raises :class:`DatasetError` naming the file and line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"cannot read the dataset {path}: {exc}") from exc
    if lines and "puzzles" in [c.strip().lower() for c in next(csv.reader([lines[0]]))]:
        rows = list(csv.DictReader(lines))
        column = next(c for c in rows[0] if c.strip().lower() == "puzzles") if rows else "Puzzles"
        items = [(index + 2, (row.get(column) or "").strip()) for index, row in enumerate(rows)]
    else:
        items = [(index + 1, line.strip()) for index, line in enumerate(lines) if line.strip()]
    puzzles = []
    for line_number, puzzle in items[: limit if limit is not None else None]:
        try:
            parse_puzzle(puzzle)
        except PuzzleError as exc:
            raise DatasetError(f"{path}, line {line_number}: {exc}") from exc
        puzzles.append(puzzle)
    if not puzzles:
        raise DatasetError(f"{path} holds no puzzles")
    return puzzles


def run_baseline(model: ChatModel, method: str, puzzle: str, **completion_kwargs: Any) -> Attempt:
    """One IO or CoT attempt: a single call with the paper's few-shot prompt; the answer is its ``Answer:``
    line (or, failing that, the expression its steps build)."""
    from llamabot.bot.simplebot import SimpleBot

    prompt = {"io": IO_PROMPT, "cot": COT_PROMPT}[method]
    started = time.perf_counter()
    try:
        reply = SimpleBot(prompt, model=model, model_settings=completion_kwargs)(baseline_user(puzzle))
    except Exception as exc:  # noqa: BLE001 - one failed attempt is a recorded failure, not the end of the run
        return Attempt(puzzle, method, None, False, 0, 1, 0, 0, time.perf_counter() - started,
                       error=f"{type(exc).__name__}: {exc}")
    answer = extract_answer(reply.content, puzzle)
    return Attempt(
        puzzle, method, answer, answer is not None and check_game24(puzzle, answer), 1, 1,
        reply.usage.prompt_tokens, reply.usage.completion_tokens, time.perf_counter() - started,
    )


def run_tot(model: ChatModel, puzzle: str, options: dict[str, Any], *, verify: bool = False,
            prompts: Game24Prompts | None = None, **completion_kwargs: Any) -> Attempt:
    """One ToT search with the Game-of-24 prompts (default :func:`game24_prompts`); the answer is the expression
    its solution path builds."""
    from llamabot.reasoning.tot.graph import ToTBot

    started = time.perf_counter()
    bot = ToTBot(model=model, prompts=prompts or game24_prompts(), goal_test=is_solution_path if verify else None,
                 model_settings=completion_kwargs, **options)
    try:
        result = bot(puzzle)
    except Exception as exc:  # noqa: BLE001 - one failed attempt is a recorded failure, not the end of the run
        return Attempt(puzzle, "tot", None, False, 0, 0, 0, 0, time.perf_counter() - started,
                       termination="error", error=f"{type(exc).__name__}: {exc}")
    machine = result.machine
    assert machine is not None
    in_tree = any(is_solution_path(puzzle, path_texts(machine, node_id)) for node_id in machine.nodes)
    calls = len(bot.last_trace.of_kind("model_call")) if bot.last_trace else 0
    answer = result.answer
    return Attempt(
        puzzle, "tot", answer, answer is not None and check_game24(puzzle, answer), len(machine.nodes) - 1, calls,
        result.usage.get("prompt_tokens", 0), result.usage.get("completion_tokens", 0),
        time.perf_counter() - started, termination=result.termination.reason, solution_in_tree=in_tree,
        error=result.diagnostics.get("error"), steps=list(result.solution_text),
    )


def method_prompts(methods: Sequence[str], prompts: Game24Prompts | None = None) -> dict[str, tuple[str, ...]]:
    """The prompt texts each method sends (the baselines' few-shot prompts and user turn; ToT's Game-of-24
    prompts, default :func:`game24_prompts`), for the report's prompt versions."""
    texts = {"io": (IO_PROMPT, baseline_user("1 2 3 4")), "cot": (COT_PROMPT, baseline_user("1 2 3 4")),
             "tot": (prompts or game24_prompts()).prompt_texts()}
    return {m: texts[m] for m in methods}


def evaluate_game24(
    puzzles: Sequence[str],
    model: str | ChatModel | None = None,
    *,
    methods: Sequence[str] = METHODS,
    tot_options: dict[str, Any] | None = None,
    verify: bool = False,
    prompts: Game24Prompts | None = None,
    dataset: str = "game24",
    on_attempt: Callable[[Attempt], None] | None = None,
    checkpoint: Callable[[EvalReport], None] | None = None,
    resume: Mapping[str, Any] | None = None,
    on_resume: Callable[[int], None] | None = None,
    **completion_kwargs: Any,
) -> EvalReport:
    """Run every method on every puzzle (puzzle by puzzle) on one model; ``on_attempt`` sees each result and
    ``checkpoint`` the report so far after each one (``partial`` until the last), so that an interrupted run of
    hours keeps what it finished. ``resume``: such a report (``to_dict``), whose attempts are kept and not run
    again; :class:`ResumeError` if it was made with another model, other settings or other prompts;
    ``on_resume`` is then told how many attempts were kept, once they are (before the first new attempt).
    ``prompts``: ToT's Game-of-24 prompts and their options (default :func:`game24_prompts`); the report
    records their options (``tries``, ``last_results``, ``pair_steps``) and a hash of their texts."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    chat_model = get_model(model)
    options = {**GAME24_TOT_OPTIONS, **(tot_options or {})}
    prompts = prompts or game24_prompts()
    config = {"methods": list(methods), "tot_options": dict(options), "verify": verify, **prompts.options(),
              "completion": completion_kwargs,
              "puzzles": len(puzzles)}
    report = EvalReport(chat_model.name, dataset, config,
                        provenance=provenance(chat_model.name, {m: dict(completion_kwargs) for m in methods},
                                              method_prompts(methods, prompts)))
    if resume is not None:
        report.attempts.extend(resumed_attempts(resume, report, puzzles))
        if on_resume is not None:
            on_resume(len(report.attempts))
    finished = {(a.puzzle, a.method) for a in report.attempts}
    for puzzle in puzzles:
        for method in methods:
            if (puzzle, method) in finished:
                continue
            if method == "tot":
                attempt = run_tot(chat_model, puzzle, options, verify=verify, prompts=prompts, **completion_kwargs)
            else:
                attempt = run_baseline(chat_model, method, puzzle, **completion_kwargs)
            report.attempts.append(attempt)
            if on_attempt is not None:
                on_attempt(attempt)
            if checkpoint is not None:
                checkpoint(report)
    return report


def resumed_attempts(previous: Mapping[str, Any], report: EvalReport, puzzles: Sequence[str]) -> list[Attempt]:
    """The attempts of ``previous`` (a report's ``to_dict``) on these puzzles and methods, for ``report`` to keep;
    the previous provenance goes under ``report.provenance["resumed_from"]``. Raises :class:`ResumeError` naming
    every difference of model, decoding, prompts or configuration (the number of puzzles aside)."""
    old_config = {k: v for k, v in (previous.get("config") or {}).items() if k != "puzzles"}
    new_config = {k: v for k, v in report.config.items() if k != "puzzles"}
    check_resumable(previous.get("provenance") or {}, report.provenance,
                    [f"config.{d}" for d in provenance_differences(old_config, new_config)])
    wanted, methods = set(puzzles), set(report.config["methods"])
    try:
        return [Attempt(**a) for a in previous.get("attempts", []) if a["puzzle"] in wanted and a["method"] in methods]
    except (KeyError, TypeError) as exc:
        raise ResumeError(f"the report to resume has an attempt that cannot be read: {exc}") from exc

"""Game-of-24 evaluation: Tree of Thoughts against the IO and CoT baselines, on the same model.

For each puzzle and method the harness records whether the answer checks (:func:`check_game24`), the nodes
explored (ToT: thought nodes, the root excluded; IO and CoT: one answer), the model calls, the tokens and the
wall time. ToT also records whether *any* explored path solves the puzzle (``solution_in_tree``: the search
found it, whether or not the evaluator ranked it first). Nothing here uses the checker to steer a search
unless ``verify=True`` is asked for (then ToT stops at the first verified path, which is no longer a fair
comparison, and the report says so). The run is :func:`llamabot.evals.run.evaluate`'s: a case per puzzle and
method, each runner (:func:`baseline_outcome`, :func:`tot_outcome`) returning an ``Outcome`` with these measures.
"""

from __future__ import annotations

import asyncio
import csv
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from llamabot.errors import LlamabotError
from llamabot.evals import run
from llamabot.evals.dataset import Case
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
from llamabot.evals.methods import MethodBot, case_id, method_cases, split_case_id
from llamabot.evals.provenance import ResumeError, check_resumable, provenance, provenance_differences
from llamabot.evals.run import Outcome
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


def baseline_outcome(model: ChatModel, method: str, puzzle: str, **completion_kwargs: Any) -> Outcome:
    """One IO or CoT call with the paper's few-shot prompt; the answer is its ``Answer:`` line (or, failing
    that, the expression its steps build)."""
    from llamabot.bot.simplebot import SimpleBot

    prompt = {"io": IO_PROMPT, "cot": COT_PROMPT}[method]
    reply = SimpleBot(prompt, model=model, model_settings=completion_kwargs)(baseline_user(puzzle))
    usage = reply.usage
    return Outcome(extract_answer(reply.content, puzzle), usage.prompt_tokens + usage.completion_tokens,
                   metrics={"nodes": 1, "model_calls": 1, "prompt_tokens": usage.prompt_tokens,
                            "completion_tokens": usage.completion_tokens})


def tot_outcome(model: ChatModel, puzzle: str, options: dict[str, Any], *, verify: bool = False,
                prompts: Game24Prompts | None = None, **completion_kwargs: Any) -> Outcome:
    """One ToT search with the Game-of-24 prompts (default :func:`game24_prompts`); the answer is the expression
    its solution path builds; the measures: nodes (the root excluded), calls, termination, solution in tree."""
    from llamabot.reasoning.tot.graph import ToTBot

    bot = ToTBot(model=model, prompts=prompts or game24_prompts(), goal_test=is_solution_path if verify else None,
                 model_settings=completion_kwargs, **options)
    result = bot(puzzle)
    machine = result.machine
    assert machine is not None
    prompt_tokens, completion_tokens = result.usage.get("prompt_tokens", 0), result.usage.get("completion_tokens", 0)
    return Outcome(result.answer, prompt_tokens + completion_tokens, result.diagnostics.get("error"), {
        "nodes": len(machine.nodes) - 1,
        "model_calls": len(bot.last_trace.of_kind("model_call")) if bot.last_trace else 0,
        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "termination": result.termination.reason,
        "solution_in_tree": any(is_solution_path(puzzle, path_texts(machine, n)) for n in machine.nodes),
        "steps": list(result.solution_text)})


def run_baseline(model: ChatModel, method: str, puzzle: str, **completion_kwargs: Any) -> Attempt:
    """One IO or CoT attempt (:func:`baseline_outcome`), scored and recorded as the harness records it."""
    return _run_one(method, puzzle, partial(baseline_outcome, model, method, **completion_kwargs))


def run_tot(model: ChatModel, puzzle: str, options: dict[str, Any], *, verify: bool = False,
            prompts: Game24Prompts | None = None, **completion_kwargs: Any) -> Attempt:
    """One ToT attempt (:func:`tot_outcome`, ``options`` as they are), scored and recorded as the harness does."""
    search = partial(tot_outcome, model, options=options, verify=verify, prompts=prompts, **completion_kwargs)
    return _run_one("tot", puzzle, search)


def _run_one(method: str, puzzle: str, runner: Callable[[str], Outcome]) -> Attempt:
    return _attempt(asyncio.run(run.run_case(runner, Case(case_id(method, puzzle), puzzle), _solves)))


#: An attempt whose run raised: what each method spent (a baseline made its one call).
_FAILED = {"io": {"model_calls": 1}, "cot": {"model_calls": 1}, "tot": {"termination": "error"}}


def _attempt(attempt: run.Attempt) -> Attempt:
    """The harness's record of a general attempt."""
    method, puzzle = split_case_id(attempt.case)
    m = attempt.metrics or {"nodes": 0, "model_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                            **_FAILED[method]}
    return Attempt(puzzle, method, attempt.output, attempt.score >= 1.0, seconds=attempt.seconds,
                   error=attempt.error, **m)


def _as_case(a: Attempt) -> run.Attempt:
    """A kept attempt of a report as the general attempt of its method's case."""
    return run.Attempt(case_id(a.method, a.puzzle), a.answer, float(a.solved), a.seconds,
                       a.prompt_tokens + a.completion_tokens, a.error, None,
                       {k: getattr(a, k) for k in ("nodes", "model_calls", "prompt_tokens", "completion_tokens",
                                                   "termination", "solution_in_tree", "steps")})


def _solves(output: str, case: Case) -> bool:
    return check_game24(split_case_id(case.id)[1], output)


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
    runners = {"io": partial(baseline_outcome, chat_model, "io", **completion_kwargs),
               "cot": partial(baseline_outcome, chat_model, "cot", **completion_kwargs),
               "tot": partial(tot_outcome, chat_model, options=options, verify=verify, prompts=prompts,
                              **completion_kwargs)}

    def told(attempt: run.Attempt) -> None:
        report.attempts.append(_attempt(attempt))
        if on_attempt is not None:
            on_attempt(report.attempts[-1])
        if checkpoint is not None:
            checkpoint(report)

    items = [Case(puzzle, puzzle) for puzzle in puzzles]
    ran = run.evaluate(MethodBot({m: runners[m] for m in methods}), method_cases(items, methods, dataset), _solves,
                       concurrency=1, on_attempt=told, kept=[_as_case(a) for a in report.attempts],
                       provenance=report.provenance)
    report.attempts = [_attempt(a) for a in ran.attempts]
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

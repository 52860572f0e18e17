"""The AoT evaluation harness: datasets, answer scoring, and AoT against the same model answering directly, run
by :func:`llamabot.evals.run.evaluate` (a case per problem and method; each runner returns an ``Outcome``).

Datasets (``--dataset``): ``multiarith`` (JSON with ``sQuestion``/``lSolutions``), ``svamp`` (JSON with
``Body``/``Question``/``Answer``), ``arith`` (CSV ``idx,expression,answer``).
"""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from llamabot.errors import LlamabotError
from llamabot.evals import run
from llamabot.evals.dataset import Case
from llamabot.evals.methods import MethodBot, case_id, method_cases, split_case_id
from llamabot.evals.provenance import ResumeError, check_resumable
from llamabot.evals.run import Outcome
from llamabot.evals.scorers import is_correct, parse_number, rounded_places

DIRECT_PROMPT = "Solve the problem. Reply with only the final numeric answer, no words."
COT_PROMPT = (
    "Solve the problem. Think step by step, then give the final answer on the last line as 'Answer: <number>'."
)


@dataclass(frozen=True, slots=True)
class Problem:
    """``places``: the answer is given rounded to this many decimals (a gold such as ``-3.93`` for
    -3.9333...), so an answer is right when it rounds to it; ``None``: the answer is exact."""

    id: str
    question: str
    answer: float
    places: int | None = None
    equation: str | None = None  # the gold equation, for classifying misses (llamabot.evals.aot_misses)

    def is_correct(self, predicted: float | None, tolerance: float = 1e-4) -> bool:
        return is_correct(predicted, self.answer, tolerance, self.places)


def load_problems(dataset: str, path: str | Path) -> list[Problem]:
    """Read a dataset file into problems. Raises ValueError for an unknown dataset name or a bad file."""
    path = Path(path)
    if dataset == "multiarith":
        rows = json.loads(path.read_text())
        return [Problem(str(r.get("iIndex", i)), r["sQuestion"].strip(), float(r["lSolutions"][0]),
                        equation=";".join(r.get("lEquations", [])) or None) for i, r in enumerate(rows)]
    if dataset == "svamp":
        rows = json.loads(path.read_text())
        return [
            Problem(str(r.get("ID", i)), f"{r['Body'].strip()} {r['Question'].strip()}", float(r["Answer"]),
                    equation=r.get("Equation"))
            for i, r in enumerate(rows)
        ]
    if dataset == "arith":  # idx,expression,answer, with or without a header row
        with path.open(newline="") as handle:
            rows = [row for row in csv.reader(handle) if row]
        if rows and rows[0][0].strip().lower() == "idx":
            rows = rows[1:]
        return [Problem(idx, f"What is {expression}?", float(answer), rounded_places(answer), expression)
                for idx, expression, answer in rows]
    raise ValueError(f"unknown dataset {dataset!r}; use multiarith, svamp or arith")


@dataclass(slots=True)
class Attempt:
    """One method on one problem."""

    problem: str
    gold: float
    predicted: float | None
    correct: bool
    latency_s: float
    tokens: int
    plan_valid_first: bool | None = None  # AoT only: the first plan passed validation
    replans: int = 0
    parse_failures: int = 0
    error: str | None = None
    execution_replans: int = 0  # AoT only: re-plans after a failed execution
    plan: dict[str, Any] | None = None  # AoT only: the plan that gave the answer (its reasoning included)


@dataclass(slots=True)
class MethodSummary:
    method: str
    accuracy: float
    correct: int
    total: int
    mean_latency_s: float
    mean_tokens: float
    plan_validity_rate: float | None = None
    replans: int = 0
    parse_failures: int = 0
    errors: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    execution_replans: int = 0


def summarise(method: str, attempts: list[Attempt]) -> MethodSummary:
    total = len(attempts) or 1
    correct = sum(a.correct for a in attempts)
    validity = [a.plan_valid_first for a in attempts if a.plan_valid_first is not None]
    return MethodSummary(
        method=method,
        accuracy=correct / total,
        correct=correct,
        total=len(attempts),
        mean_latency_s=statistics.fmean(a.latency_s for a in attempts) if attempts else 0.0,
        mean_tokens=statistics.fmean(a.tokens for a in attempts) if attempts else 0.0,
        plan_validity_rate=(sum(validity) / len(validity)) if validity else None,
        replans=sum(a.replans for a in attempts),
        execution_replans=sum(a.execution_replans for a in attempts),
        parse_failures=sum(a.parse_failures for a in attempts),
        errors=sum(a.error is not None for a in attempts),
        attempts=attempts,
    )


def run_aot(bot: Any, question: str) -> Outcome:
    """One AoT attempt, with its plan validity and re-plans; a plan that fails validation or execution is a
    measured failure (no answer, the tokens and re-plans of its trace)."""
    from llamabot.reasoning.aot.record import AtomExecutionError
    from llamabot.reasoning.aot.validate import PlanValidationError

    try:
        result = bot(question)
    except (PlanValidationError, AtomExecutionError, LlamabotError, ValueError) as exc:
        trace = bot.last_trace
        if isinstance(exc, PlanValidationError):
            parse_failures = sum(1 for e in exc.errors if e.code == "malformed")
        else:
            parse_failures = 0
        execution_replans = len(exc.earlier) if isinstance(exc, AtomExecutionError) else 0
        replans = len(trace.of_kind("model_call")) - 1 - execution_replans if trace else 0
        return Outcome(None, _trace_tokens(trace), f"{type(exc).__name__}: {exc}", {
            "plan_valid_first": _first_plan_valid(trace), "replans": max(replans, 0),
            "parse_failures": parse_failures, "execution_replans": execution_replans})
    return Outcome(result.answer, result.usage.total_tokens, metrics={
        "predicted": parse_number(result.answer), "plan_valid_first": _first_plan_valid(result.trace),
        "replans": result.replans, "parse_failures": result.parse_failures,
        "execution_replans": len(result.execution_failures), "plan": result.plan.to_dict()})


def _first_plan_valid(trace: Any) -> bool:
    """Whether the run's first plan passed validation (its ``plan`` decision span recorded no errors)."""
    plans = trace.of_kind("decision") if trace is not None else []
    return bool(plans) and not plans[0].attributes.get("errors")


def run_direct(bot: Any, question: str) -> Outcome:
    """The same model answering directly or step by step (the baselines)."""
    reply = bot(question)
    return Outcome(reply.content, reply.usage.total_tokens, metrics={"predicted": parse_number(reply.content)})


def _trace_tokens(trace: Any) -> int:
    if trace is None:
        return 0
    return sum(s.attributes["reply"].usage.total_tokens for s in trace.of_kind("model_call") if "reply" in s.attributes)


#: The completion settings of the baselines (AoT's come from ``aot_options``).
BASELINE_SETTINGS: dict[str, dict[str, Any]] = {"direct": {"max_tokens": 32}, "cot": {"max_tokens": 384}}


def method_settings(methods: tuple[str, ...], aot_options: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The settings each method runs with: AoT's bot options (``samples``, ``temperature``, re-plans...) with the
    bot's defaults filled in, the baselines' completion settings. Raises ``ValueError`` for an unknown method."""
    from llamabot.reasoning.aot.prompts import resolve_expressions

    unknown = sorted(set(methods) - {"aot", *BASELINE_SETTINGS})
    if unknown:
        raise ValueError(f"unknown methods {unknown}; use aot, direct, cot")
    settings: dict[str, dict[str, Any]] = {}
    for method in methods:
        if method == "aot":
            options = {"max_replans": 2, "max_execution_replans": 1, "samples": 1, "subquestions": False,
                       "reasoning": True,
                       **{k: v for k, v in (aot_options or {}).items() if v is not None}}
            # the calculator tools are the bot's defaults: expressions unless sub-questions (AoTBot's own rule)
            options["expressions"] = resolve_expressions(options.get("expressions"), None, options["subquestions"])
            settings[method] = options
        else:
            settings[method] = dict(BASELINE_SETTINGS[method])
    return settings


def method_prompts(methods: tuple[str, ...], aot_options: dict[str, Any] | None = None) -> dict[str, list[str]]:
    """The prompt texts each method sends (AoT: the planner's system prompt for the calculator tools, in the form
    ``aot_options`` choose, and its re-plan messages), for the report's prompt versions."""
    from llamabot.reasoning.aot.prompts import EXECUTION_FAILED_MESSAGE, REPLAN_MESSAGE, planner_prompt
    from llamabot.toolkits.calculator import CALCULATOR_TOOLS, EXPRESSION_TOOLS
    from llamabot.tools.tool import as_tool

    texts = {"direct": [DIRECT_PROMPT], "cot": [COT_PROMPT]}
    if "aot" in methods:
        options = method_settings(("aot",), aot_options)["aot"]
        questions, expressions = options["subquestions"], options["expressions"]
        tools = {t.name: t for t in map(as_tool, EXPRESSION_TOOLS if expressions else CALCULATOR_TOOLS)}
        texts["aot"] = [planner_prompt(tools, {}, questions=questions, expressions=expressions,
                                       reasoning=options["reasoning"]), REPLAN_MESSAGE,
                        EXECUTION_FAILED_MESSAGE]
    return {m: texts[m] for m in methods}


def evaluate(
    problems: list[Problem],
    model_name: Any = None,
    *,
    tolerance: float = 1e-4,
    methods: tuple[str, ...] = ("aot", "direct"),
    on_attempt: Callable[[str, Attempt], None] | None = None,
    aot_options: dict[str, Any] | None = None,
    resume: Mapping[str, Mapping[str, Attempt]] | None = None,
) -> dict[str, MethodSummary]:
    """Run each method on every problem with the same model, problem by problem (one
    :func:`~llamabot.evals.run.evaluate` run, one case at a time); returns a summary per method. ``aot_options``:
    keyword arguments of ``AoTBot`` (``samples``, ``temperature``, ``max_execution_replans``...). ``resume``:
    method -> problem id -> an attempt kept from an interrupted report (:func:`resumed_attempts`), taken as it
    is instead of run again (``on_attempt`` is told only of the attempts run now)."""
    from llamabot.bot.options import settings_apart
    from llamabot.bot.simplebot import SimpleBot
    from llamabot.reasoning.aot.graph import AoTBot

    settings = method_settings(methods, aot_options)
    runners: dict[str, Callable[[str], Outcome]] = {}
    if "aot" in methods:
        runners["aot"] = partial(run_aot, AoTBot(model=model_name, **settings_apart(settings["aot"])))
    for baseline in ("direct", "cot"):  # the same model answering at once / reasoning step by step in text
        if baseline in methods:
            prompt = DIRECT_PROMPT if baseline == "direct" else COT_PROMPT
            runners[baseline] = partial(run_direct, SimpleBot(prompt, model=model_name,
                                                              **settings_apart(settings[baseline])))
    by_id = {p.id: p for p in problems}

    def told(attempt: run.Attempt) -> None:
        if on_attempt is not None:
            method, problem = split_case_id(attempt.case)
            on_attempt(method, _attempt(attempt, by_id[problem]))

    kept = [_as_case(method, a) for method, attempts in (resume or {}).items() for a in attempts.values()]
    items = [Case(p.id, p.question, p.answer, {"places": p.places}) for p in problems]
    ran = run.evaluate(MethodBot(runners), method_cases(items, list(runners)), _scorer(tolerance), concurrency=1,
                       on_attempt=told, kept=kept)
    attempts: dict[str, list[Attempt]] = {m: [] for m in runners}
    for attempt in ran.attempts:
        method, problem = split_case_id(attempt.case)
        attempts[method].append(_attempt(attempt, by_id[problem]))
    return {m: summarise(m, a) for m, a in attempts.items()}


def _scorer(tolerance: float) -> Callable[[str, Case], bool]:
    def score(output: str, case: Case) -> bool:
        return is_correct(parse_number(output), case.expected, tolerance, case.metadata.get("places"))

    return score


#: The measures of an AoT attempt kept in the general attempt's ``metrics``.
_MEASURES = ("predicted", "plan_valid_first", "replans", "parse_failures", "execution_replans", "plan")


def _attempt(attempt: run.Attempt, problem: Problem) -> Attempt:
    """The harness's record of a general attempt on ``problem``."""
    return Attempt(problem.id, problem.answer, correct=attempt.score >= 1.0, latency_s=attempt.seconds,
                   tokens=attempt.tokens, error=attempt.error, **{"predicted": None, **attempt.metrics})


def _as_case(method: str, a: Attempt) -> run.Attempt:
    """A kept attempt of a report as the general attempt of ``method``'s case."""
    return run.Attempt(case_id(method, a.problem), None, float(a.correct), a.latency_s, a.tokens, a.error, a.gold,
                       {k: getattr(a, k) for k in _MEASURES})


def resumed_attempts(previous: Mapping[str, Any], now: dict[str, Any], problems: list[Problem],
                     methods: tuple[str, ...], *, dataset: str, tolerance: float) -> dict[str, dict[str, Attempt]]:
    """The attempts of ``previous`` (a report of :func:`report`, e.g. one an interrupted ``llamabot eval aot``
    left) on these problems and methods, as method -> problem id -> attempt, for :func:`evaluate` to keep.
    ``now``: this run's provenance (:func:`run_provenance`); the previous one is recorded under its
    ``resumed_from``. Raises :class:`ResumeError` naming every difference of model, decoding settings, prompts,
    dataset kind or tolerance, or an attempt that cannot be read."""
    differences = [f"{key}: {previous.get(key)!r} != {value!r}"
                   for key, value in (("dataset", dataset), ("tolerance", tolerance)) if previous.get(key) != value]
    check_resumable(previous.get("provenance") or {}, now, differences)
    wanted = {p.id for p in problems}
    kept: dict[str, dict[str, Attempt]] = {}
    try:
        for method in methods:
            entries = ((previous.get("methods") or {}).get(method) or {}).get("attempts") or []
            kept[method] = {a.problem: a for a in (Attempt(**e) for e in entries) if a.problem in wanted}
    except (AttributeError, KeyError, TypeError) as exc:
        raise ResumeError(f"the report to resume has an attempt that cannot be read: {exc}") from exc
    return kept


def run_provenance(model: str, methods: tuple[str, ...], aot_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The provenance of an evaluation (model, each method's settings, the sha256 of each method's prompts, the
    commit: see :mod:`llamabot.evals.provenance`). Take it before the first problem runs: the commit is the
    code that ran, even if the checkout moves on during a long evaluation."""
    from llamabot.evals.provenance import provenance

    return provenance(model, method_settings(methods, aot_options), method_prompts(methods, aot_options))


def report(summaries: dict[str, MethodSummary], *, dataset: str, path: str, model: str,
           aot_options: dict[str, Any] | None = None, provenance: dict[str, Any] | None = None,
           tolerance: float | None = None) -> dict[str, Any]:
    """A JSON-ready report of an evaluation, with ``provenance`` as :func:`run_provenance` took it when the
    evaluation started (taken now when not given) and the ``tolerance`` answers were scored with."""
    methods = tuple(summaries)
    return {
        "dataset": dataset,
        "path": path,
        "model": model,
        "tolerance": tolerance,
        "provenance": provenance if provenance is not None else run_provenance(model, methods, aot_options),
        "methods": {m: asdict(s) for m, s in summaries.items()},
    }

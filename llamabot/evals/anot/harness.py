"""The evaluation harness: run a method (``anot`` or the ``cot`` baseline) over a dataset's requests.

For each request: pick the candidates (gold + others, seeded shuffle), rank them with the method, and record
the ranking in candidate positions (1-indexed) and in dataset indices, Hits@k, the reciprocal rank, wall time,
per-phase timings, model calls and tokens. A request whose run raises is recorded with its error and an empty
ranking (a miss), and the evaluation goes on. Both methods go through exactly this code: one
:func:`~llamabot.evals.run.evaluate` run, a case per request (its candidates chosen before), scored by the
reciprocal rank, :func:`rank_request` reporting the rest as the attempt's measures.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from llamabot.evals import run
from llamabot.evals.anot.data import Dataset, Request, select_candidates
from llamabot.evals.anot.metrics import KS, hits_at, reciprocal_rank, summarize
from llamabot.evals.dataset import Case
from llamabot.evals.dataset import Dataset as Cases
from llamabot.evals.provenance import provenance
from llamabot.evals.run import Outcome
from llamabot.models.base import ChatModel
from llamabot.reasoning.anot.debug import DebugLog

METHODS = ("anot", "cot")


@dataclass
class RequestRecord:
    """One request's outcome. Positions are 1-indexed into ``candidates`` (dataset indices, 0-based)."""

    request_id: str
    group: str
    method: str
    candidates: list[int]
    gold_idx: int
    gold_position: int
    ranking: list[int]
    ranking_idx: list[int]
    seconds: float
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    ranking_source: str = ""
    score_ranking: list[int] | None = None
    final_ranking: list[int] | None = None
    errors: list[str] = field(default_factory=list)
    failed: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def hit(self, k: int) -> bool:
        return bool(hits_at(self.ranking, self.gold_position, k))

    @property
    def reciprocal_rank(self) -> float:
        return reciprocal_rank(self.ranking, self.gold_position)


@dataclass
class EvalReport:
    """All records of one method's evaluation, with the configuration that produced them."""

    method: str
    model: str
    dataset: str
    candidates: int
    seed: int | str
    records: list[RequestRecord] = field(default_factory=list)
    #: Model, decoding settings, prompt versions and commit (:mod:`llamabot.evals.provenance`).
    provenance: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Hits@1..5, MRR, and means per request of seconds, calls, tokens and each phase's cost."""
        records = self.records
        n = len(records)
        summary: dict[str, Any] = summarize([(r.ranking, r.gold_position) for r in records])
        for prefix, attribute in (("scores", "score_ranking"), ("final", "final_ranking")):
            kept = [r for r in records if getattr(r, attribute) is not None]
            if kept:
                alternative = summarize([(getattr(r, attribute) or [], r.gold_position) for r in kept])
                summary.update({f"{prefix}_{k}": v for k, v in alternative.items() if k != "n"})

        def mean(values: list[float]) -> float:
            return sum(values) / n if n else 0.0

        summary["seconds_per_request"] = mean([r.seconds for r in records])
        summary["calls_per_request"] = mean([r.calls for r in records])
        summary["prompt_tokens_per_request"] = mean([r.prompt_tokens for r in records])
        summary["completion_tokens_per_request"] = mean([r.completion_tokens for r in records])
        phases: dict[str, dict[str, float]] = {}
        for record in records:
            for name, stats in record.phases.items():
                entry = phases.setdefault(name, {"seconds": 0.0, "calls": 0.0, "prompt_tokens": 0.0})
                for key in entry:
                    entry[key] += stats.get(key, 0) / n
        summary["phases_per_request"] = phases
        summary["ranking_sources"] = dict(Counter(r.ranking_source for r in records))
        summary["requests_with_errors"] = sum(1 for r in records if r.errors or r.failed)
        summary["failed_requests"] = sum(1 for r in records if r.failed)
        return summary

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "model": self.model,
            "dataset": self.dataset,
            "candidates": self.candidates,
            "seed": self.seed,
            "provenance": self.provenance,
            "summary": self.summary(),
            "records": [asdict(r) for r in self.records],
        }


def make_bot(method: str, model: str | ChatModel | None, log: DebugLog, **options: Any) -> Any:
    """The sync bot for ``method`` (``anot`` -> ANoTBot, ``cot`` -> CoTBot)."""
    from llamabot.bot.options import settings_apart

    if method == "anot":
        from llamabot.reasoning.anot.bot import ANoTBot

        return ANoTBot(model=model, debug=log, **settings_apart(options))
    if method == "cot":
        from llamabot.evals.anot.cot import CoTBot

        return CoTBot(model=model, debug=log, **settings_apart(options))
    raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")


def rank_request(bot: Any, items: Sequence[dict[str, Any]], text: str, candidates: list[int], tag: str) -> Outcome:
    """Rank one request's candidates (dataset indices) with ``bot``: the ranking in candidate positions (1-indexed),
    its source, per-phase timings, calls, tokens and errors, and the bot's full result as ``detail``."""
    result = bot(text, [items[i] for i in candidates], request_tag=tag)
    totals = result.totals
    alternatives = {attribute: list(found.indices) if (found := getattr(result, attribute, None)) is not None else None
                    for attribute in ("score_ranking", "final_ranking")}
    return Outcome(list(result.ranking.indices), totals.prompt_tokens + totals.completion_tokens, metrics={
        "ranking_source": result.ranking.source,
        "phases": {name: stats.to_dict() for name, stats in result.stats.items()},
        "calls": totals.calls, "prompt_tokens": totals.prompt_tokens, "completion_tokens": totals.completion_tokens,
        "errors": list(result.errors), **alternatives, "detail": result.to_dict()})


def _reciprocal_rank(output: str, case: Case) -> float:
    return reciprocal_rank(json.loads(output), case.expected)


def _record(attempt: run.Attempt, case: Case, method: str) -> RequestRecord:
    """The harness's record of a general attempt on a request's case (a failed one: an empty ranking, a miss)."""
    chosen = case.input["candidates"]
    ranking = json.loads(attempt.output) if attempt.error is None and attempt.output else []
    return RequestRecord(case.id, case.metadata["group"], method, chosen, case.metadata["gold_idx"], case.expected,
                         ranking, [chosen[p - 1] for p in ranking], attempt.seconds, failed=attempt.error,
                         **attempt.metrics)


def select_requests(dataset: Dataset, request_ids: Sequence[str] | None, limit: int | None) -> list[Request]:
    """The requests to evaluate: those named (in the order given), else all; then the first ``limit``."""
    requests = list(dataset.requests)
    if request_ids:
        by_id = {r.id: r for r in requests}
        unknown = [i for i in request_ids if i not in by_id]
        if unknown:
            raise ValueError(f"unknown request ids {unknown}; the dataset has {', '.join(by_id)}")
        requests = [by_id[i] for i in request_ids]
    return requests if limit is None else requests[: max(0, limit)]


def evaluate(
    dataset: Dataset,
    method: str,
    model: str | ChatModel | None = None,
    *,
    limit: int | None = None,
    candidates: int = 10,
    seed: int | str = 0,
    debug: int | DebugLog | None = None,
    debug_sink: Callable[[str], None] | None = None,
    on_record: Callable[[RequestRecord], None] | None = None,
    request_ids: Sequence[str] | None = None,
    on_start: Callable[[dict[str, Any]], None] | None = None,
    **bot_options: Any,
) -> EvalReport:
    """Evaluate ``method`` on the requests named by ``request_ids`` (default: all, in file order), the first
    ``limit`` of them (all when ``None``). An unknown request id raises ``ValueError`` naming the known ones.
    ``on_start`` receives the report's provenance before the first request runs."""
    requests = select_requests(dataset, request_ids, limit)
    log = DebugLog.resolve(debug, debug_sink)
    bot = make_bot(method, model, log, **bot_options)
    report = EvalReport(method, bot.model_name, dataset.name, candidates, seed,
                        provenance=provenance(bot.model_name, {method: bot.decoding}, {method: bot.prompt_texts}))
    if on_start is not None:
        on_start(report.provenance)
    cases = []
    for index, request in enumerate(requests):
        chosen = select_candidates(len(dataset.items), request.gold_idx, candidates, seed, request.id)
        cases.append(Case(request.id, {"text": request.text, "candidates": chosen, "tag": f"R{index:02d}"},
                          chosen.index(request.gold_idx) + 1, {"group": request.group, "gold_idx": request.gold_idx}))
    by_id = {case.id: case for case in cases}

    def told(attempt: run.Attempt) -> None:
        if on_record is not None:
            on_record(_record(attempt, by_id[attempt.case], method))

    ran = run.evaluate(partial(rank_request, bot, dataset.items), Cases(cases, dataset.name), _reciprocal_rank,
                       concurrency=1, on_attempt=told, provenance=report.provenance)
    report.records = [_record(attempt, by_id[attempt.case], method) for attempt in ran.attempts]
    return report


__all__ = ["KS", "METHODS", "EvalReport", "RequestRecord", "evaluate", "make_bot", "rank_request", "select_requests"]

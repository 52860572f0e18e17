"""The CoT baseline: every item in the prompt (each cut to an equal share of a token budget), one model call
that reasons step by step and ends with the top-5 list. Ranked with the same parser as ANoT's final step.

``CoTBot(...)(query, items)`` and ``await AsyncCoTBot(...).arun(query, items)`` return a :class:`CoTResult`
shaped like :class:`ANoTResult` where the harness reads it (``ranking``, ``stats``, ``errors``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llamabot.bot.options import bot_settings, positional_model, strict_options
from llamabot.models.exchange import arun_exchange, run_exchange
from llamabot.models.seam import ChatModel, get_model
from llamabot.observe.tracing import Span, Trace, run, span
from llamabot.reasoning.anot.debug import FULL, SUMMARY, DebugLog
from llamabot.reasoning.anot.executor import prompt_exchange
from llamabot.reasoning.anot.item_views import TokenCounter, approx_tokens, render_items_budgeted
from llamabot.reasoning.anot.prompts import COT_SYSTEM, COT_USER
from llamabot.reasoning.anot.ranking import Ranking, parse_ranking
from llamabot.reasoning.anot.stats import PHASE_KIND, PhaseStats, phase_stats, total

DEFAULT_TOKEN_BUDGET = 5500


@dataclass
class CoTResult:
    """The baseline's ranking (1-indexed item numbers), its raw output and what it cost."""

    ranking: Ranking
    output: str
    stats: dict[str, PhaseStats]
    trace: Trace
    n_items: int
    errors: list[str] = field(default_factory=list)

    @property
    def best(self) -> int | None:
        return self.ranking.best

    @property
    def totals(self) -> PhaseStats:
        return total(self.stats)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.ranking.record(),
            "output": self.output,
            "errors": self.errors,
            "phases": {name: s.to_dict() for name, s in self.stats.items()},
            "trace_id": self.trace.trace_id,
        }


class CoTBot:
    """Rank ``items`` for a request in one chain-of-thought call: ``bot(query, items) -> CoTResult``.

    ``token_budget``: how many tokens of item text the prompt may hold (split equally between the items,
    counted by ``count_tokens``, an estimate by default). ``max_tokens``: the reasoning's length limit.
    """

    @strict_options
    def __init__(
        self,
        _model: str | ChatModel | None = None,
        /,
        *,
        model: str | ChatModel | None = None,
        model_settings: dict[str, Any] | None = None,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        count_tokens: TokenCounter = approx_tokens,
        max_tokens: int = 512,
        debug: int | DebugLog | None = None,
        debug_sink: Callable[[str], None] | None = None,
    ):
        model = positional_model(type(self).__name__, _model, model)
        completion_kwargs = bot_settings(self, model_settings)
        self.model = get_model(model)
        self.model_name = self.model.name
        self.token_budget = token_budget
        self.count_tokens = count_tokens
        self.params = {**completion_kwargs, "max_tokens": max_tokens}
        #: What its calls are made with, and the prompt texts it sends (for an evaluation report's provenance).
        self.decoding = {"cot": dict(self.params), "token_budget": token_budget}
        self.prompt_texts = (COT_SYSTEM, COT_USER)
        self.log = DebugLog.resolve(debug, debug_sink)
        self.last_result: CoTResult | None = None

    def prompt(self, query: str, items: Sequence[Any]) -> str:
        """The user prompt: the request and every item within the budget."""
        if not items:
            raise ValueError("CoT needs at least one item to rank")
        return COT_USER.format(query=query, items=render_items_budgeted(items, self.token_budget, self.count_tokens))

    def _result(self, output: str, n_items: int, trace: Trace, root: Span | None, tag: str) -> CoTResult:
        ranking = parse_ranking(output, n_items)
        stats = phase_stats(trace, root)
        totals = total(stats)
        self.log(FULL, "CoT", tag, f"response: {output}")
        self.log(
            SUMMARY, "CoT", tag,
            f"Final ranking: {ranking.best} (top-5 {list(ranking.top(5))}, from {ranking.source}); "
            f"{totals.seconds:.1f} s, {totals.prompt_tokens} prompt tokens",
        )
        self.last_result = CoTResult(ranking, output, stats, trace, n_items)
        return self.last_result

    def __call__(self, query: str, items: Sequence[Any], *, request_tag: str = "R00") -> CoTResult:
        prompt = self.prompt(query, items)
        with self.log.session():  # the debug lines of this call (see debug.py)
            self.log(FULL, "CoT", request_tag, f"prompt: {prompt}")
            with run(type(self).__name__, query=query) as trace, span("cot", "anot_run") as root:
                with span("CoT", PHASE_KIND):
                    output = run_exchange(prompt_exchange(self.model_name, COT_SYSTEM, prompt, self.params), self.model)
            return self._result(output, len(items), trace, root, request_tag)


class AsyncCoTBot(CoTBot):
    """Async twin of :class:`CoTBot`: ``await bot.arun(query, items)``."""

    async def arun(self, query: str, items: Sequence[Any], *, request_tag: str = "R00") -> CoTResult:
        prompt = self.prompt(query, items)
        with self.log.session():
            self.log(FULL, "CoT", request_tag, f"prompt: {prompt}")
            with run(type(self).__name__, query=query) as trace, span("cot", "anot_run") as root:
                with span("CoT", PHASE_KIND):
                    output = await arun_exchange(prompt_exchange(self.model_name, COT_SYSTEM, prompt, self.params),
                                                 self.model)
            return self._result(output, len(items), trace, root, request_tag)

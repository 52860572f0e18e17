"""The CoT baseline: every item in the prompt (each cut to an equal share of a token budget: scalars and
attributes first, then list fields such as reviews, as far as the share lasts), one model call that reasons step
by step and ends with the top-5 list. Ranked with the same parser as ANoT's final step.

``CoTBot(...)(query, items)`` and ``await AsyncCoTBot(...).arun(query, items)`` return a :class:`CoTResult`
shaped like :class:`ANoTResult` where the harness reads it (``ranking``, ``stats``, ``errors``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llamabot.bot.options import bot_settings, positional_model, strict_options
from llamabot.models.base import ChatModel
from llamabot.models.exchange import arun_exchange, run_exchange
from llamabot.models.resolve import get_model
from llamabot.observe.tracing import Span, Trace, run, span
from llamabot.reasoning.anot.debug import FULL, SUMMARY, DebugLog
from llamabot.reasoning.anot.executor import prompt_exchange
from llamabot.reasoning.anot.ranking import Ranking, parse_ranking
from llamabot.reasoning.anot.stats import PHASE_KIND, PhaseStats, phase_stats, total

DEFAULT_TOKEN_BUDGET = 5500

COT_SYSTEM = (
    "You rank items for a request. Think step by step, briefly: first name the request's conditions in one line, "
    "then write one short line per item: its number and which conditions it meets or fails. "
    "On the last line output the top-5 item numbers, best first, as a list like [3, 1, 4, 2, 5]."
)

COT_USER = """Request: {query}

Items:
{items}

Which items best match the request? Answer in this form, one short line per item (do not copy the items):
Conditions: <the request's conditions>
1: meets <...>; fails <...>
2: meets <...>; fails <...>
...
Top-5: [<best>, <2nd>, <3rd>, <4th>, <5th>]"""

TokenCounter = Callable[[str], int]


def approx_tokens(text: str) -> int:
    """About 3.5 characters per token: a conservative estimate for English and JSON-like text."""
    return math.ceil(len(text) / 3.5)


def _inline(value: dict[str, Any]) -> str:
    """``k=v, sub(k=v, ...)``: a dict's scalars on one line, nested dicts in parentheses, lists left out."""
    return ", ".join(f"{key}({text})" if nested else f"{key}={text}" for key, text, nested in _shown(value))


def _scalar_lines(item: dict[str, Any]) -> list[str]:
    """``key: value`` for top-level scalars, ``key: k=v, ...`` for top-level dicts; lists are left out."""
    return [f"{key}: {text}" for key, text, _ in _shown(item)]


def _shown(value: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """``(key, text, nested)`` for each entry that is not a list: a nested dict as :func:`_inline` text."""
    return [(key, _inline(child), True) if isinstance(child, dict) else (key, str(child), False)
            for key, child in value.items() if not isinstance(child, list)]


def _list_texts(item: dict[str, Any]) -> list[str]:
    texts = []
    for key, child in item.items():
        if isinstance(child, list):
            for element in child:
                if isinstance(element, dict):
                    text = element.get("text")
                    extra = ", ".join(f"{k}={v}" for k, v in element.items() if k != "text" and not isinstance(v, (dict, list)))
                    texts.append(f"- {key}: {text!s}" + (f" ({extra})" if extra else ""))
                else:
                    texts.append(f"- {key}: {element}")
    return texts


def render_item(item: Any, budget_tokens: int, count: TokenCounter = approx_tokens) -> str:
    """One item as text within ``budget_tokens``: its scalar fields (``attributes: WiFi=free, ...``) first, then the
    texts of its list fields (reviews), cut where the budget ends."""
    if not isinstance(item, dict):
        text = str(item)
        limit = max(0, budget_tokens) * 3
        return text if count(text) <= budget_tokens else text[:limit] + "..."
    parts = ["\n".join(_scalar_lines(item))]
    used = count(parts[0])
    for line in _list_texts(item):
        cost = count(line)
        if used + cost > budget_tokens:
            room = budget_tokens - used
            if room > 20:
                parts.append(line[: int(room * 3.5)] + "...")
            break
        parts.append(line)
        used += cost
    text = "\n".join(parts)
    if count(text) > budget_tokens:  # the scalars alone exceed the share
        text = text[: int(budget_tokens * 3.5)] + "..."
    return text


def render_items_budgeted(items: Sequence[Any], budget_tokens: int, count: TokenCounter = approx_tokens) -> str:
    """Every item as ``[n] text``, each within an equal share of ``budget_tokens``."""
    share = max(1, budget_tokens // max(1, len(items)))
    return "\n\n".join(f"[{n}] {render_item(item, share, count)}" for n, item in enumerate(items, start=1))


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

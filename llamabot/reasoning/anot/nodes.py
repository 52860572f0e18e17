"""The nodes of the ANoT graph, one per phase (all :class:`DualNode`s: ``prep``/``post`` once, ``exec`` twins)::

    StrategyNode -("lwt")-> LWTNode -("execute")-> LayerNode -("layer")-> LayerNode ... -("rank")-> RankNode

- ``StrategyNode`` (phase 1): the request and the items' compact schema -> a validated :class:`Strategy`
  (``StructuredBot``'s exchange: bounded repair). If no valid strategy comes, phase 2 works from the request.
- ``LWTNode`` (phase 2): runs the AgentBot graph (decision node + ``lwt_*``/``read``/``done`` tool nodes) on a
  fresh per-run script, starting from the draft compiled from the strategy. If the agent run fails (too many
  invalid calls, a script ``done`` keeps refusing, a text reply, or a failed model call), the agent's script if
  executable, else the draft, else a one-step script runs, and the reason is kept in ``phase2``.
- ``LayerNode`` (phase 3): one visit per execution layer; fills the layer's steps and runs them (concurrently
  in the async flow), then loops to itself until the last layer.
- ``RankNode``: parses the final step's output into a ranking (fallbacks in ``ranking.py``); ends the run.

Nodes keep no per-run attributes: everything per run is in the shared dict (see ``state.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from llamabot.agents.agentbot import AgentBot
from llamabot.models.exchange import arun_exchange, run_exchange
from llamabot.bot.structuredbot import StructuredBot
from llamabot.graph.agent_state import new_run_state
from llamabot.graph.flow import DualNode
from llamabot.errors import StructuredOutputError
from llamabot.models.seam import ChatModel
from llamabot.reasoning.anot.debug import FULL, SUMMARY, VERBOSE, DebugLog
from llamabot.reasoning.anot.draft import draft_lwt, fallback_lwt
from llamabot.reasoning.anot.executor import DEFAULT_CONCURRENCY, StepCall, arun_layer, fill_layer, run_layer
from llamabot.reasoning.anot.item_views import compact_schema
from llamabot.reasoning.anot.logic import logic_scores
from llamabot.reasoning.anot.lwt import LWTError, LWTStep, execution_layers, final_step, render_lwt
from llamabot.reasoning.anot.prompts import PHASE1_USER, PHASE2_USER_DRAFT, PHASE2_USER_EMPTY
from llamabot.reasoning.anot.ranking import (
    RANK_BY,
    Ranking,
    condition_votes,
    parse_index_list,
    parse_ranking,
    ranked_by_scores,
)
from llamabot.reasoning.anot.script import LWTScript
from llamabot.reasoning.anot.stats import PHASE_KIND, model_calls_in
from llamabot.reasoning.anot.strategy import (
    Strategy,
    brief_conditions,
    merge_duplicate_conditions,
    render_strategy,
)
from llamabot.reasoning.anot.substitution import DEFAULT_MAX_CHARS, SubstitutionContext
from llamabot.reasoning.anot.tools import PHASE2_KEY, Phase2Context
from llamabot.reasoning.anot.vocabulary import Vocabulary
from llamabot.observe.tracing import Span, current_run, current_trace, run, span


#: The run value (``current_run().values``) holding the run's :class:`DebugLog`: a live handle, never in the state.
LOG_KEY = "anot_log"
_SILENT = DebugLog()


def run_log() -> DebugLog:
    """The active run's debug log (silent outside an ANoT run)."""
    context = current_run()
    return context.values.get(LOG_KEY, _SILENT) if context is not None else _SILENT


def log_model_calls(shared: dict[str, Any], phase_name: str, phase: Span | None) -> None:
    """At level FULL, every prompt and response of the phase's model calls (read off the trace)."""
    log = run_log()
    trace = current_trace()
    if phase is None or trace is None or not log.enabled(FULL):
        return
    for call in model_calls_in(trace, phase):
        request, reply = call.attributes.get("request"), call.attributes.get("reply")
        if request is not None:
            for message in request.messages:
                content = message.get("content") or ""
                calls = message.get("tool_calls")
                log(FULL, phase_name, shared["tag"], f"prompt {message['role']}: {content}" + (f" {calls}" if calls else ""))
        if reply is not None:
            calls = ", ".join(f"{c.name}({c.arguments})" for c in reply.tool_calls)
            log(FULL, phase_name, shared["tag"], f"response: {reply.content or ''}{calls}")


# -- phase 1 -----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class PhaseOutcome:
    value: Any
    phase: Span | None
    error: str | None = None


@contextmanager
def phase_outcome(
    name: str, expected: type[BaseException], describe: Callable[[BaseException], str]
) -> Iterator[PhaseOutcome]:
    """A phase span and the outcome its body fills in (sync and async ``exec`` alike); an ``expected`` failure
    becomes the outcome's ``error`` instead of propagating."""
    with span(name, PHASE_KIND) as phase:
        outcome = PhaseOutcome(None, phase)
        try:
            yield outcome
        except expected as exc:
            outcome.value, outcome.error = None, describe(exc)


def _phase1_failure(exc: BaseException) -> str:
    return f"phase 1: {exc}"


def _phase2_failure(exc: BaseException) -> str:
    return f"phase 2: {type(exc).__name__}: {exc}"


class StrategyNode(DualNode):
    """Phase 1: the request and a compact schema of the items -> a validated strategy."""

    name = "strategy"

    def __init__(self, planner: StructuredBot, vocabulary: Vocabulary, schema_examples: int = 2):
        super().__init__()
        self.planner = planner
        self.vocabulary = tuple(vocabulary)
        self.schema_examples = schema_examples

    def prep(self, shared: dict[str, Any]) -> str:
        query = shared["query"]
        run_log()(SUMMARY, "P1", shared["tag"], f"Planning for: {query[:80]}{'...' if len(query) > 80 else ''}")
        schema = compact_schema(shared["items"], self.schema_examples)
        return PHASE1_USER.format(query=query, n_items=shared["n_items"], schema=schema)

    def exec(self, message: str) -> PhaseOutcome:
        with phase_outcome("P1", StructuredOutputError, _phase1_failure) as outcome:
            outcome.value = run_exchange(self.planner.exchange(message), self.planner.model)
        return outcome

    async def exec_async(self, message: str) -> PhaseOutcome:
        with phase_outcome("P1", StructuredOutputError, _phase1_failure) as outcome:
            outcome.value = await arun_exchange(self.planner.exchange(message), self.planner.model)
        return outcome

    def post(self, shared: dict[str, Any], message: str, outcome: PhaseOutcome) -> str:
        log, tag = run_log(), shared["tag"]
        log_model_calls(shared, "P1", outcome.phase)
        strategy: Strategy | None = outcome.value
        if strategy is None:
            shared["errors"].append(outcome.error)
            log(SUMMARY, "P1", tag, f"No valid strategy ({outcome.error}); phase 2 works from the request")
            return "lwt"
        if strategy.total_items != shared["n_items"]:
            log(VERBOSE, "P1", tag, f"TOTAL_ITEMS {strategy.total_items} corrected to {shared['n_items']}")
            strategy.total_items = shared["n_items"]
        strategy, merged = merge_duplicate_conditions(strategy)
        if merged:
            log(VERBOSE, "P1", tag, "Merged repeated conditions: " + ", ".join(f"{a} = {b}" for a, b in merged.items()))
        shared["strategy"] = strategy
        shared["strategy_text"] = render_strategy(strategy, self.vocabulary)
        log(VERBOSE, "P1", tag, shared["strategy_text"])
        return "lwt"


# -- phase 2 -----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Phase2Input:
    state: dict[str, Any]
    context: Phase2Context
    draft: list[LWTStep]


class LWTNode(DualNode):
    """Phase 2: the AgentBot graph writes the LWT script with ``lwt_list/lwt_insert/lwt_set/read/done``."""

    name = "lwt"

    def __init__(self, agent: AgentBot, vocabulary: Vocabulary, *, draft: bool = True, read_chars: int = 1200):
        super().__init__()
        self.agent = agent
        self.vocabulary = tuple(vocabulary)
        self.draft = draft
        self.read_chars = read_chars

    def prep(self, shared: dict[str, Any]) -> Phase2Input:
        strategy: Strategy | None = shared["strategy"]
        items, n_items = shared["items"], shared["n_items"]
        draft = draft_lwt(strategy, items, self.vocabulary) if strategy is not None else []
        script = LWTScript(draft if self.draft else [], items)
        context = Phase2Context(script, items, shared["query"], self.read_chars, run_log(), shared["tag"])
        conditions = brief_conditions(strategy, self.vocabulary) if strategy is not None else f"Request: {shared['query']}"
        template = PHASE2_USER_DRAFT if len(script) else PHASE2_USER_EMPTY
        message = template.format(conditions=conditions, n_items=n_items, listing=script.listing())
        run_log()(VERBOSE, "P2", shared["tag"], f"ReAct expansion: {len(script)} initial steps...")
        state = new_run_state(message, memory=[], trace_id=shared["trace_id"])
        return Phase2Input(state, context, draft)

    def _agent_run(self, inp: Phase2Input) -> run:
        return run(type(self.agent).__name__, values={"globals_dict": {PHASE2_KEY: inp.context}}, query="anot phase 2")

    # Any failure of the agent run (it gave up, or its model failed) falls back to a script in ``post``.
    def exec(self, inp: Phase2Input) -> PhaseOutcome:
        with phase_outcome("P2", Exception, _phase2_failure) as outcome, self._agent_run(inp):
            self.agent.flow.run(inp.state)
            outcome.value = inp.state.get("result")
        return outcome

    async def exec_async(self, inp: Phase2Input) -> PhaseOutcome:
        with phase_outcome("P2", Exception, _phase2_failure) as outcome, self._agent_run(inp):
            await self.agent.async_flow.run_async(inp.state)
            outcome.value = inp.state.get("result")
        return outcome

    def post(self, shared: dict[str, Any], inp: Phase2Input, outcome: PhaseOutcome) -> str:
        log, tag = run_log(), shared["tag"]
        log_model_calls(shared, "P2", outcome.phase)
        fallback = outcome.error
        if fallback is None and not inp.state["_done"]:
            fallback = "phase 2: the agent ended without done()"
        if fallback is not None:
            shared["errors"].append(fallback)
        steps, layers, source = _script_to_run(inp.context.script, inp.draft, shared["n_items"])
        if fallback is not None:
            log(SUMMARY, "P2", tag, f"Phase 2 did not finish ({fallback}); running {source}")
        shared["steps"], shared["layers"] = steps, layers
        shared["phase2"] = {
            "iterations": inp.state["iteration_count"],
            "tool_calls": list(inp.context.calls),
            "fallback": None if fallback is None else source,
            "error": fallback,
        }
        log(VERBOSE, "P2", tag, f"ReAct done after {inp.state['iteration_count']} iterations")
        log(VERBOSE, "P2", tag, "LWT:\n" + render_lwt(steps))
        return "execute"


def _script_to_run(script: LWTScript, draft: list[LWTStep], n_items: int) -> tuple[list[LWTStep], list[list[LWTStep]], str]:
    """The agent's script if it is executable, else the draft, else the one-step fallback script."""
    for steps, source in ((list(script.steps), "the agent's script"), (draft, "the draft")):
        if steps:
            try:
                return steps, execution_layers(steps), source
            except LWTError:
                continue
    steps = fallback_lwt(n_items)
    return steps, execution_layers(steps), "a one-step script"


# -- phase 3 -----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class LayerInput:
    index: int
    calls: list[StepCall]


class LayerNode(DualNode):
    """Phase 3: run one execution layer (its steps concurrently in the async flow), then the next."""

    name = "layer"

    def __init__(
        self,
        model: ChatModel,
        params: dict[str, Any],
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_chars: int = DEFAULT_MAX_CHARS,
    ):
        super().__init__()
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.model = model
        self.completion_params = params  # not `params`: pocketflow's Flow overwrites node.params on every run
        self.concurrency = concurrency
        self.max_chars = max_chars

    def prep(self, shared: dict[str, Any]) -> LayerInput:
        index, layers = shared["layer"], shared["layers"]
        if index == 0:
            run_log()(VERBOSE, "P3", shared["tag"], f"Executing {len(shared['steps'])} steps in {len(layers)} layers...")
        context = SubstitutionContext(shared["query"], shared["items"], shared["outputs"], self.max_chars)
        return LayerInput(index, fill_layer(layers[index], context))

    def exec(self, inp: LayerInput) -> PhaseOutcome:
        with span("P3", PHASE_KIND, layer=inp.index) as phase:
            return PhaseOutcome(run_layer(inp.calls, self.model, self.completion_params), phase)

    async def exec_async(self, inp: LayerInput) -> PhaseOutcome:
        with span("P3", PHASE_KIND, layer=inp.index) as phase:
            return PhaseOutcome(await arun_layer(inp.calls, self.model, self.completion_params, self.concurrency), phase)

    def post(self, shared: dict[str, Any], inp: LayerInput, outcome: PhaseOutcome) -> str:
        log, tag = run_log(), shared["tag"]
        outputs: dict[str, str] = outcome.value
        shared["outputs"].update(outputs)
        for call in inp.calls:
            if call.error is not None:
                shared["errors"].append(call.error)
            if log.enabled(FULL) and call.prompt is not None:
                log(FULL, "P3", tag, f"({call.step.id}) filled: {call.prompt}")
            log(VERBOSE, "P3", tag, f"layer {inp.index}: ({call.step.id}) -> {' '.join(outputs[call.step.id].split())[:200]}")
        shared["layer"] += 1
        return "layer" if shared["layer"] < len(shared["layers"]) else "rank"


def fallback_scores(strategy: Strategy | None, outputs: dict[str, str], final_id: str, n_items: int) -> dict[int, float]:
    """Scores used when the final output gives no ranking (and to complete one): the strategy's logic over the
    condition steps ``c<id>`` when the script has them, else votes of every non-final step."""
    if strategy is not None and any(f"c{c.id}" in outputs for c in strategy.conditions):
        satisfied = {c.id: set(parse_index_list(outputs.get(f"c{c.id}"), n_items) or ()) for c in strategy.conditions}
        return logic_scores(strategy.logic_tree, satisfied, n_items)
    return condition_votes(outputs, final_id, n_items)


class RankNode(DualNode):
    """Turn the final step's output into a ranking; ends the run.

    ``rank_by="scores"`` (default): the ranking by the strategy's logic over the condition steps' outputs
    (deterministic), unless no condition step listed any item, in which case the final step's output is used.
    ``rank_by="final"`` (the seed's way): the final step's output, completed by the condition scores. Both
    rankings are kept either way (``score_ranking``, ``final_ranking``). On the 20 dev requests the embedded
    1.5B model answered the final step at chance level (Hits@1 0.05) while the logic over its own condition
    outputs ranked the gold item first 6 times as often (0.30): see docs/design/anot/LLD.md, Measurements.
    """

    name = "rank"
    terminal = True

    def __init__(self, rank_by: str = "scores"):
        super().__init__()
        if rank_by not in RANK_BY:
            raise ValueError(f"rank_by must be one of {RANK_BY}, got {rank_by!r}")
        self.rank_by = rank_by

    def prep(self, shared: dict[str, Any]) -> tuple[str, dict[str, str], Strategy | None, int]:
        return final_step(shared["steps"]).id, shared["outputs"], shared["strategy"], shared["n_items"]

    def exec(self, inp: tuple[str, dict[str, str], Strategy | None, int]) -> tuple[Ranking, Ranking]:
        final_id, outputs, strategy, n_items = inp
        scores = fallback_scores(strategy, outputs, final_id, n_items)
        by_scores = Ranking(tuple(ranked_by_scores(scores, n_items)), "scores" if any(scores.values()) else "order")
        return parse_ranking(outputs.get(final_id), n_items, scores), by_scores

    async def exec_async(self, inp: tuple[str, dict[str, str], Strategy | None, int]) -> tuple[Ranking, Ranking]:
        return self.exec(inp)

    def post(self, shared: dict[str, Any], inp: Any, rankings: tuple[Ranking, Ranking]) -> None:
        final, by_scores = rankings
        ranking = by_scores if self.rank_by == "scores" and by_scores.source == "scores" else final
        shared["ranking"], shared["score_ranking"], shared["final_ranking"] = ranking, by_scores, final
        run_log()(
            SUMMARY, "P3", shared["tag"],
            f"Final ranking: {ranking.best} (top-5 {list(ranking.top(5))}, from {ranking.source})",
        )
        return None

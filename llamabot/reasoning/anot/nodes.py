"""The nodes of the ANoT graph (all :class:`DualNode`s: ``prep``/``post`` once, ``exec`` twins)::

    StrategyNode -("lwt")-> LWTStartNode -> DecideNode <-> LWTToolNode (lwt_list, lwt_insert, lwt_set, read)
                                            DecideNode -("done")-> LWTToolNode done -> LWTEndNode
    (any phase 2 step -("failed")-> LWTEndNode)
    LWTEndNode -("execute")-> LayerNode -("layer")-> LayerNode ... -("rank")-> RankNode -("layer")-> LayerNode

- ``StrategyNode`` (phase 1): the request and the items' compact schema -> a validated :class:`Strategy`
  (the agents' ``StructuredNode``: ``StructuredBot``'s exchange, bounded repair). If no valid strategy comes, phase 2 works from the request.
- Phase 2 is the agent graph itself, wired into the ANoT flow: ``LWTStartNode`` compiles the draft, puts the
  script to edit (``script``: a list of steps) and the agent's run state (``memory``, ``_pending``,
  ``iteration_count``... see :mod:`llamabot.agents.agent_state`) into the ANoT state, and opens the ``P2`` phase
  span; a ``DecideNode`` and one ``LWTToolNode`` per tool edit the script; the terminal ``done`` leads to
  ``LWTEndNode``, which closes the phase and picks the script to run. A phase 2 step that raises (too many
  invalid calls, a text reply, a failed model call, ``done`` refusing too often) routes ``"failed"`` to
  ``LWTEndNode`` instead of failing the run: the agent's script if executable, else the draft, else a one-step
  script runs, and the reason is kept in ``phase2`` and ``errors``.
- ``LayerNode`` (phase 3, the agents' layer node): one visit per execution layer; fills the layer's steps and
  runs them at once (worker threads in the sync flow, tasks in the async flow, at most ``concurrency`` model calls
  either way), then loops to itself until the last layer.
- ``RankNode``: ranks by the condition steps' logic or the final step's output (fallbacks in ``ranking.py``);
  the final step, alone in the last layer, runs only when its output is needed (``"layer"`` back); ends the run.

Nodes keep no per-run attributes and log nothing: everything per run is data in the shared dict (see
``state.py``), the live side (the ``P2`` span handle) in the run's values; debug lines come from the run's
hooks (``debug.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from llamabot.agents import layer
from llamabot.agents.agent_state import new_run_state
from llamabot.agents.nodes import DecideNode, FuncNode, ToolStep
from llamabot.agents.structured import StructuredNode
from llamabot.bot.structuredbot import StructuredBot
from llamabot.errors import StructuredOutputError
from llamabot.graph.flow import DualNode
from llamabot.models.base import ChatModel
from llamabot.observe.tracing import Span, close_span, current_run, current_span, open_span, span
from llamabot.reasoning.anot.draft import draft_lwt, fallback_lwt
from llamabot.reasoning.anot.executor import (
    DEFAULT_CONCURRENCY,
    StepCall,
    astep_output,
    fill_layer,
    layer_outputs,
    step_output,
)
from llamabot.reasoning.anot.item_views import compact_schema
from llamabot.reasoning.anot.logic import logic_scores
from llamabot.reasoning.anot.lwt import LWTError, LWTStep, execution_layers, final_step
from llamabot.reasoning.anot.prompts import PHASE1_USER, PHASE2_NOTE, PHASE2_USER_DRAFT, PHASE2_USER_EMPTY
from llamabot.reasoning.anot.ranking import (
    RANK_BY,
    Ranking,
    condition_votes,
    parse_ranking,
    ranked_by_scores,
    step_items,
)
from llamabot.reasoning.anot.script import LWTScript
from llamabot.reasoning.anot.stats import PHASE_KIND
from llamabot.reasoning.anot.strategy import (
    Strategy,
    brief_conditions,
    merge_duplicate_conditions,
    render_strategy,
)
from llamabot.reasoning.anot.substitution import DEFAULT_MAX_CHARS, SubstitutionContext
from llamabot.reasoning.anot.tools import PHASE2_KEY, Phase2Context
from llamabot.reasoning.anot.vocabulary import Vocabulary
from llamabot.tools.tool import Tool

#: The action of a phase 2 step that failed: it leads to :class:`LWTEndNode` (the fallback).
FAILED = "failed"
#: The run value holding the open ``P2`` phase span (a live handle: never in the state).
P2_SPAN_KEY = "_anot_p2_span"


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


class StrategyNode(StructuredNode[Strategy]):
    """Phase 1: the request and a compact schema of the items -> a validated strategy (the agents'
    :class:`StructuredNode` on ``planner``, with its bounded repair), inside the ``P1`` phase span."""

    name = "strategy"

    def __init__(self, planner: StructuredBot, vocabulary: Vocabulary, schema_examples: int = 2):
        super().__init__(planner)
        self.vocabulary = tuple(vocabulary)
        self.schema_examples = schema_examples

    def prep(self, shared: dict[str, Any]) -> str:
        query = shared["query"]
        schema = compact_schema(shared["items"], self.schema_examples)
        return PHASE1_USER.format(query=query, n_items=shared["n_items"], schema=schema)

    def exec(self, message: str) -> PhaseOutcome:  # type: ignore[override]
        with phase_outcome("P1", StructuredOutputError, _phase1_failure) as outcome:
            outcome.value = super().exec(message).value
        return outcome

    async def exec_async(self, message: str) -> PhaseOutcome:  # type: ignore[override]
        with phase_outcome("P1", StructuredOutputError, _phase1_failure) as outcome:
            outcome.value = (await super().exec_async(message)).value
        return outcome

    def post(self, shared: dict[str, Any], message: str, outcome: PhaseOutcome) -> str:
        strategy: Strategy | None = outcome.value
        if strategy is None:
            shared["errors"].append(outcome.error)
            return "lwt"
        step = current_span()  # this node's span: what the hooks (debug lines) read
        if strategy.total_items != shared["n_items"]:
            if step is not None:
                step.attributes["corrected_total"] = (strategy.total_items, shared["n_items"])
            strategy.total_items = shared["n_items"]
        strategy, merged = merge_duplicate_conditions(strategy)
        if merged and step is not None:
            step.attributes["merged"] = merged
        shared["strategy"] = strategy
        shared["strategy_text"] = render_strategy(strategy, self.vocabulary)
        return "lwt"


# -- phase 2: the agent graph inside the ANoT flow ------------------------------------------------------------


def phase2_context(shared: dict[str, Any], read_chars: int) -> Phase2Context:
    """The tools' view of the run's phase 2 data: the script in ``shared["script"]`` (edited in place) and the
    tool-call record in ``shared["phase2"]["tool_calls"]``."""
    items = shared["items"]
    return Phase2Context(LWTScript.editing(shared["script"], items), items, shared["query"], read_chars,
                         shared["phase2"]["tool_calls"])


def phase2_failed(shared: dict[str, Any], exc: Exception) -> str:
    """Keep why phase 2 stopped (the agent gave up, or its model failed) and route to the fallback."""
    shared["phase2"]["error"] = f"phase 2: {type(exc).__name__}: {exc}"
    return FAILED


class Phase2Step:
    """Mixin of the phase 2 nodes: a step that raises an ``Exception`` ends phase 2 (action ``"failed"``, to
    :class:`LWTEndNode`) instead of the run. The step's own span is closed with the error first."""

    def _run(self, shared: dict[str, Any]) -> Any:
        try:
            return super()._run(shared)  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001 - any failure of the agent falls back to a script
            return phase2_failed(shared, exc)

    async def _run_async(self, shared: dict[str, Any]) -> Any:
        try:
            return await super()._run_async(shared)  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001
            return phase2_failed(shared, exc)


class LWTDecideNode(Phase2Step, DecideNode):
    """Phase 2's decision node: the agent graph's :class:`DecideNode` (offering only the LWT tools; its forced
    final decision names ``done``), whose failure ends phase 2 rather than the run."""


class LWTToolNode(Phase2Step, FuncNode):
    """Phase 2's tool node: the agent graph's :class:`FuncNode` for one LWT tool, whose hidden
    ``_globals_dict`` gets this run's :class:`Phase2Context` built from the state (so a run restored from a
    checkpoint edits its own saved script)."""

    def __init__(self, tool: Tool, *, max_errors: int = 3, read_chars: int = 1200):
        super().__init__(tool, max_errors=max_errors)
        self.read_chars = read_chars

    def prep(self, shared: dict[str, Any]) -> ToolStep:
        call, context, *rest = super().prep(shared)  # the call, its context, then what FuncNode adds (ToolStep)
        globals_dict = {PHASE2_KEY: phase2_context(shared, self.read_chars)}
        return (call, {**(context or {}), "globals_dict": globals_dict}, *rest)  # type: ignore[return-value]


@dataclass(slots=True)
class Phase2Start:
    draft: list[LWTStep]
    script: list[LWTStep]
    message: str


class LWTStartNode(DualNode):
    """Phase 2 starts: the draft, the script to edit and the agent's run state go into the ANoT state; the
    ``P2`` phase span opens (in ``prep``, so it holds this step and every agent step until :class:`LWTEndNode`)."""

    name = "lwt"

    def __init__(self, vocabulary: Vocabulary, *, draft: bool = True):
        super().__init__()
        self.vocabulary = tuple(vocabulary)
        self.draft = draft

    def prep(self, shared: dict[str, Any]) -> Phase2Start:
        context = current_run()
        if context is not None:
            context.values[P2_SPAN_KEY] = open_span("P2", PHASE_KIND)
        strategy: Strategy | None = shared["strategy"]
        items, n_items = shared["items"], shared["n_items"]
        draft = draft_lwt(strategy, items, self.vocabulary) if strategy is not None else []
        script = LWTScript(draft if self.draft else [], items)
        conditions = brief_conditions(strategy, self.vocabulary) if strategy is not None else f"Request: {shared['query']}"
        template = PHASE2_USER_DRAFT if len(script) else PHASE2_USER_EMPTY
        note = strategy.message.strip() if strategy is not None else ""
        message = template.format(conditions=conditions, n_items=n_items, listing=script.listing(),
                                  note=PHASE2_NOTE.format(note=note) if note else "")
        return Phase2Start(draft, script.steps, message)

    def exec(self, start: Phase2Start) -> Phase2Start:
        return start

    def post(self, shared: dict[str, Any], start: Phase2Start, _: Phase2Start) -> None:
        shared["draft"], shared["script"] = start.draft, list(start.script)
        shared["phase2"] = {"iterations": 0, "tool_calls": [], "fallback": None, "error": None}
        shared.update(new_run_state(start.message, memory=[], trace_id=shared["trace_id"]))
        return None  # the default edge: the agent's decision node


class LWTEndNode(DualNode):
    """Phase 2 ends (``done`` finished, or a step failed): close the ``P2`` span and choose the script to run:
    the agent's if executable, else the draft, else a one-step script."""

    name = "lwt_end"

    def prep(self, shared: dict[str, Any]) -> tuple[list[LWTStep], list[LWTStep], int]:
        context = current_run()
        if context is not None:
            close_span(context.values.pop(P2_SPAN_KEY, None))  # none after a resume inside phase 2
        return list(shared["script"]), list(shared["draft"]), shared["n_items"]

    def exec(self, inp: tuple[list[LWTStep], list[LWTStep], int]) -> tuple[list[LWTStep], list[list[LWTStep]], str]:
        return _script_to_run(*inp)

    def post(self, shared: dict[str, Any], inp: Any, chosen: tuple[list[LWTStep], list[list[LWTStep]], str]) -> str:
        phase2 = shared["phase2"]
        fallback = phase2.get("error")
        if fallback is None and not shared["_done"]:
            fallback = "phase 2: the agent ended without done()"
        steps, layers, source = chosen
        if fallback is not None:
            shared["errors"].append(fallback)
        shared["steps"], shared["layers"] = steps, layers
        phase2.update(iterations=shared["iteration_count"], fallback=None if fallback is None else source,
                      error=fallback)
        return "execute"


def _script_to_run(script: list[LWTStep], draft: list[LWTStep], n_items: int) -> tuple[list[LWTStep], list[list[LWTStep]], str]:
    """The agent's script if it is executable, else the draft, else the one-step fallback script."""
    for steps, source in ((script, "the agent's script"), (draft, "the draft")):
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


class LayerNode(layer.LayerNode):
    """Phase 3: run one execution layer (the agents' :class:`~llamabot.agents.layer.LayerNode`: its steps at
    once, at most ``concurrency`` model calls, in the sync and the async flow alike), then the next."""

    name = "layer"
    span_kind = "node"

    def __init__(
        self,
        model: ChatModel,
        params: dict[str, Any],
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_chars: int = DEFAULT_MAX_CHARS,
    ):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        super().__init__(concurrency)
        self.model = model
        self.completion_params = params  # not `params`: pocketflow's Flow overwrites node.params on every run
        self.concurrency = concurrency
        self.max_chars = max_chars

    def prep(self, shared: dict[str, Any]) -> LayerInput:
        index, layers = shared["layer"], shared["layers"]
        context = SubstitutionContext(shared["query"], shared["items"], shared["outputs"], self.max_chars)
        return LayerInput(index, fill_layer(layers[index], context))

    def items(self, inp: LayerInput) -> list[StepCall]:
        return inp.calls

    def run_item(self, inp: LayerInput, call: StepCall) -> str:
        return step_output(call, self.model, self.completion_params)

    async def arun_item(self, inp: LayerInput, call: StepCall) -> str:
        return await astep_output(call, self.model, self.completion_params)

    def exec(self, inp: LayerInput) -> PhaseOutcome:  # type: ignore[override]
        with span("P3", PHASE_KIND, layer=inp.index) as phase:
            return PhaseOutcome(layer_outputs(inp.calls, super().exec(inp)), phase)

    async def exec_async(self, inp: LayerInput) -> PhaseOutcome:  # type: ignore[override]
        with span("P3", PHASE_KIND, layer=inp.index) as phase:
            return PhaseOutcome(layer_outputs(inp.calls, await super().exec_async(inp)), phase)

    def post(self, shared: dict[str, Any], inp: LayerInput, outcome: PhaseOutcome) -> str:
        shared["outputs"].update(outcome.value)
        shared["errors"].extend(call.error for call in inp.calls if call.error is not None)
        shared["layer"] += 1
        index, layers = shared["layer"], shared["layers"]
        return "layer" if index < len(layers) and not final_on_demand(layers, index, shared["steps"]) else "rank"


def final_on_demand(layers: list[list[LWTStep]], index: int, steps: list[LWTStep]) -> bool:
    """Layer ``index`` is the last and holds only the final step: :class:`RankNode` runs it when its output
    decides the ranking (``rank_by="final"``, or no condition step listed an item), never otherwise."""
    return index == len(layers) - 1 and [s.id for s in layers[index]] == [final_step(steps).id]


def fallback_scores(strategy: Strategy | None, outputs: dict[str, str], final_id: str, n_items: int) -> dict[int, float]:
    """Scores used when the final output gives no ranking (and to complete one): the strategy's logic over the
    condition steps ``c<id>`` when the script has them, else votes of every non-final step."""
    if strategy is not None and any(f"c{c.id}" in outputs for c in strategy.conditions):
        satisfied = {c.id: set(step_items(outputs.get(f"c{c.id}"), n_items)) for c in strategy.conditions}
        return logic_scores(strategy.logic_tree, satisfied, n_items)
    return condition_votes(outputs, final_id, n_items)


class RankNode(DualNode):
    """Turn the steps' outputs into a ranking; ends the run.

    ``rank_by="scores"`` (default): the ranking by the strategy's logic over the condition steps' outputs
    (deterministic), unless no condition step listed any item, in which case the final step's output is used.
    ``rank_by="final"`` (the seed's way): the final step's output, completed by the condition scores. Both
    rankings are kept (``score_ranking``, ``final_ranking``). The final step, alone in the last layer, runs on
    demand: only when its output decides the ranking (the ``"layer"`` edge back to :class:`LayerNode`); when the
    scores decide it is never sent, and ``final_ranking`` is the score ranking (``outputs`` has no final step).
    On the 20 dev requests the embedded 1.5B model answered the final step at chance level (Hits@1 0.05) while the
    logic over its own condition outputs ranked the gold item first 6 times as often (0.30): see
    benchmarks/results/anot.md.
    """

    name = "rank"
    terminal = True

    def __init__(self, rank_by: str = "scores"):
        super().__init__()
        if rank_by not in RANK_BY:
            raise ValueError(f"rank_by must be one of {RANK_BY}, got {rank_by!r}")
        self.rank_by = rank_by

    def prep(self, shared: dict[str, Any]) -> tuple[str, dict[str, str], Strategy | None, int, bool]:
        pending = shared["layer"] < len(shared["layers"])  # the final step, on demand (LayerNode.post)
        return final_step(shared["steps"]).id, shared["outputs"], shared["strategy"], shared["n_items"], pending

    def exec(self, inp: tuple[str, dict[str, str], Strategy | None, int, bool]) -> tuple[Ranking, Ranking] | None:
        final_id, outputs, strategy, n_items, pending = inp
        scores = fallback_scores(strategy, outputs, final_id, n_items)
        by_scores = Ranking(tuple(ranked_by_scores(scores, n_items)), "scores" if any(scores.values()) else "order")
        if pending and (self.rank_by == "final" or by_scores.source != "scores"):
            return None  # the final step's output decides: run it first
        return parse_ranking(outputs.get(final_id), n_items, scores), by_scores

    async def exec_async(self, inp: tuple[str, dict[str, str], Strategy | None, int, bool]) -> tuple[Ranking, Ranking] | None:
        return self.exec(inp)

    def post(self, shared: dict[str, Any], inp: Any, rankings: tuple[Ranking, Ranking] | None) -> str | None:
        if rankings is None:
            return "layer"
        final, by_scores = rankings
        ranking = by_scores if self.rank_by == "scores" and by_scores.source == "scores" else final
        shared["ranking"], shared["score_ranking"], shared["final_ranking"] = ranking, by_scores, final
        return None

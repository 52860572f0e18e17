"""ANoTBot and AsyncANoTBot: rank any list of JSON items for a request with ANoT's three phases.

    StrategyNode -("lwt")-> LWTStartNode -> decide -(tool)-> lwt_list | lwt_insert | lwt_set | read -("decide")-> decide
                                             decide -("done")-> done -> LWTEndNode    (any phase 2 step -("failed")-> LWTEndNode)
    LWTEndNode -("execute")-> LayerNode -("layer")-> LayerNode -("rank")-> RankNode

Phase 2 *is* the agent graph (the agent's decision node + one tool node per tool, wired as ``AgentBot`` wires
them) inside the ANoT flow: its decision node offers only ``lwt_list``, ``lwt_insert``, ``lwt_set``, ``read``
and the terminal ``done`` (its forced final decision names ``done``), and its run state lives in the ANoT
state. Every graph is built per bot; every run gets a fresh shared dict and trace, so concurrent ``arun``
calls on one bot never share state. The condition vocabulary is a constructor argument (``YELP_VOCABULARY``
by default), not hard-coded. Debug lines come from a lifecycle hook (:class:`DebugHook`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from llamabot.agents.graphbot import RUN_OPTIONS, AwaitedCall, GraphBot
from llamabot.bot.options import bot_settings, positional_model, strict_options
from llamabot.bot.structuredbot import StructuredBot
from llamabot.bot.toolbot import ToolBot
from llamabot.graph.flow import AsyncFlow, Flow
from llamabot.graph.mermaid import MermaidDiagram, to_mermaid
from llamabot.models.base import ChatModel
from llamabot.models.resolve import get_model
from llamabot.models.settings import ModelSettings
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Trace, close_span, current_run, current_span
from llamabot.observe.usage import UsageLimits
from llamabot.reasoning.anot.debug import TAG_KEY, DebugHook, DebugLog
from llamabot.reasoning.anot.executor import DEFAULT_CONCURRENCY
from llamabot.reasoning.anot.lwt import LWTStep, execution_layers, parse_lwt
from llamabot.reasoning.anot.nodes import (
    FAILED,
    P2_SPAN_KEY,
    LayerNode,
    LWTDecideNode,
    LWTEndNode,
    LWTStartNode,
    LWTToolNode,
    RankNode,
    StrategyNode,
)
from llamabot.reasoning.anot.prompts import (
    PHASE1_SYSTEM,
    PHASE1_USER,
    PHASE2_NOTE,
    PHASE2_SYSTEM,
    PHASE2_SYSTEM_DRAFT,
    PHASE2_USER_DRAFT,
    PHASE2_USER_EMPTY,
    STEP_SYSTEM,
)
from llamabot.reasoning.anot.ranking import Ranking
from llamabot.reasoning.anot.state import ANoTResult, new_anot_state
from llamabot.reasoning.anot.stats import phase_stats
from llamabot.reasoning.anot.strategy import condition_model, strategy_model
from llamabot.reasoning.anot.substitution import DEFAULT_MAX_CHARS
from llamabot.reasoning.anot.tools import PHASE2_TOOLS, done
from llamabot.reasoning.anot.vocabulary import YELP_VOCABULARY, Vocabulary, describe_vocabulary
from llamabot.tools.tool import DECIDE, as_tool


class ANoTBot(GraphBot):
    """Rank ``items`` (any JSON objects) for a request: ``bot(query, items) -> ANoTResult``.

    ``model``: a LiteLLM model string, a chat model object (``ScriptedModel``) or ``None`` (default model);
    ``model_settings`` (``temperature``, ``api_base``...): provider settings for every model call; ``hooks``,
    ``usage_limits``: as for every bot. Every option is a keyword; an unknown one is a ``TypeError``.
    ``vocabulary``: the condition types phase 1 may use. ``draft``: start phase 2 from the script compiled from
    the strategy (``False``: from an empty script, as in the seed). ``max_iterations``/``max_errors``/
    ``history_limit``: bounds of phase 2's agent loop. ``concurrency``: phase 3's limit on simultaneous model
    calls per layer (async). ``max_substitution_chars``: cap per substituted variable. ``rank_by``: ``"scores"``
    (default: the strategy's logic over the condition steps' outputs) or ``"final"`` (the seed's way: the final
    step's output); both rankings are always kept (``score_ranking``, ``final_ranking``), see :class:`RankNode`. ``*_max_tokens``: completion limits per phase. ``debug``: level 0-3 or a
    :class:`DebugLog` (default: ``$ANOT_DEBUG``).
    """

    @strict_options
    def __init__(
        self,
        _model: str | ChatModel | None = None,
        /,
        *,
        model: str | ChatModel | None = None,
        model_settings: ModelSettings | dict[str, Any] | None = None,
        vocabulary: Vocabulary = YELP_VOCABULARY,
        draft: bool = True,
        max_iterations: int = 6,
        max_errors: int = 3,
        history_limit: int | None = 8,
        max_repairs: int = 2,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_substitution_chars: int = DEFAULT_MAX_CHARS,
        rank_by: str = "scores",
        read_chars: int = 1200,
        plan_max_tokens: int = 512,
        agent_max_tokens: int = 256,
        step_max_tokens: int = 128,
        debug: int | DebugLog | None = None,
        debug_sink: Callable[[str], None] | None = None,
        hooks: Iterable[RunHooks] = (),
        usage_limits: UsageLimits | None = None,
    ):
        model = positional_model(type(self).__name__, _model, model)
        self.log = DebugLog.resolve(debug, debug_sink)
        self.debug_hook = DebugHook(self.log)
        super().__init__(hooks=(self.debug_hook, *hooks), usage_limits=usage_limits)
        completion_kwargs = bot_settings(self, model_settings)
        self.model_settings = completion_kwargs
        self.model = get_model(model)
        self.model_name = self.model.name
        self.vocabulary = tuple(vocabulary)
        self.strategy_model = strategy_model(self.vocabulary)
        #: The run-time classes in the run state, for the state codec (``dumps_state(state, allowed=...)``,
        #: checkpoints): the vocabulary's strategy model and its condition model.
        self.state_classes = (self.strategy_model, condition_model(self.strategy_model))
        phase1_system = PHASE1_SYSTEM.format(vocabulary=describe_vocabulary(self.vocabulary))
        planner = StructuredBot(
            phase1_system,
            self.strategy_model,
            model=self.model,
            max_repairs=max_repairs,
            model_settings={**completion_kwargs, "max_tokens": plan_max_tokens},
        )
        agent_kwargs = {**completion_kwargs, "max_tokens": agent_max_tokens}
        agent_system = PHASE2_SYSTEM_DRAFT if draft else PHASE2_SYSTEM
        #: What each phase's calls are made with, and the prompt texts the bot sends (for an evaluation report's
        #: provenance; the phase 2 tools' descriptions are prompt text too).
        self.decoding = {
            "phase1": {**completion_kwargs, "max_tokens": plan_max_tokens, "max_repairs": max_repairs},
            "phase2": {**agent_kwargs, "max_iterations": max_iterations, "max_errors": max_errors,
                       "history_limit": history_limit, "draft": draft},
            "phase3": {**completion_kwargs, "max_tokens": step_max_tokens, "concurrency": concurrency},
            "rank_by": rank_by,
        }
        self.prompt_texts = (phase1_system, PHASE1_USER, agent_system, PHASE2_USER_DRAFT, PHASE2_USER_EMPTY,
                             PHASE2_NOTE, STEP_SYSTEM,
                             *(json.dumps(as_tool(t).json_schema, sort_keys=True) for t in PHASE2_TOOLS))
        self.decide_node = LWTDecideNode(
            ToolBot(agent_system, model=self.model, tools=PHASE2_TOOLS, model_settings=agent_kwargs),
            ToolBot(agent_system, model=self.model, tools=PHASE2_TOOLS, tool_choice=done.tool.name,
                    model_settings=agent_kwargs),
            max_iterations=max_iterations,
            max_errors=max_errors,
            history_limit=history_limit,
        )
        self.tool_nodes = {
            t.name: LWTToolNode(t, max_errors=max_errors, read_chars=read_chars) for t in map(as_tool, PHASE2_TOOLS)
        }
        self.strategy_node = StrategyNode(planner, self.vocabulary)
        self.lwt_node = LWTStartNode(self.vocabulary, draft=draft)
        self.lwt_end_node = LWTEndNode()
        self.layer_node = LayerNode(
            self.model,
            {**completion_kwargs, "max_tokens": step_max_tokens},
            concurrency=concurrency,
            max_chars=max_substitution_chars,
        )
        self.rank_node = RankNode(rank_by)
        self.strategy_node - "lwt" >> self.lwt_node
        self.lwt_node >> self.decide_node
        # phase 2: the agent graph, wired as AgentBot wires it, with two exits to LWTEndNode
        for name, node in self.tool_nodes.items():
            self.decide_node - name >> node
            node - (node.tool.loopback_name or DECIDE) >> self.decide_node
            node - FAILED >> self.lwt_end_node
        self.decide_node - DECIDE >> self.decide_node
        self.decide_node - FAILED >> self.lwt_end_node
        self.tool_nodes[done.tool.name] >> self.lwt_end_node  # done() finished the script
        self.lwt_end_node - "execute" >> self.layer_node
        self.layer_node - "layer" >> self.layer_node
        self.layer_node - "rank" >> self.rank_node
        self.rank_node - "layer" >> self.layer_node  # the final step, when its output decides the ranking
        self.set_graph(self.strategy_node)
        self.execute_flow = Flow(start=self.layer_node)
        self.async_execute_flow = AsyncFlow(start=self.layer_node)
        self.last_result: ANoTResult | None = None

    # -- one logic for both call styles (GraphBot): build the run's state, then turn it into a result ----------

    def flows(self, options: dict[str, Any]) -> tuple[Flow, AsyncFlow]:
        if options.get("script") is not None:
            return self.execute_flow, self.async_execute_flow
        return self.flow, self.async_flow

    def new_state(self, query: str, trace: Trace, options: dict[str, Any]) -> dict[str, Any]:
        shared = new_anot_state(query, options["items"], tag=options.get("request_tag", "R00"),
                                trace_id=trace.trace_id)
        script = options.get("script")
        if script is not None:
            steps = parse_lwt(script) if isinstance(script, str) else list(script)
            shared["steps"], shared["layers"] = steps, execution_layers(steps)
        return shared

    def run_values(self, options: dict[str, Any]) -> dict[str, Any]:
        """The run's live values (never in the state): the request tag of its debug lines; the open ``P2``
        span is kept here too while phase 2 runs."""
        return {TAG_KEY: options.get("request_tag", "R00")}

    def failed(self, state: dict[str, Any], error: BaseException) -> None:
        context = current_run()
        if context is not None:  # the run ends inside phase 2 (cancelled, interrupted): close its span
            close_span(context.values.pop(P2_SPAN_KEY, None), None, error)

    def result(self, shared: dict[str, Any], trace: Trace) -> ANoTResult:
        stats = phase_stats(trace, current_span())  # the phases of this run (its span is the active one)
        ranking: Ranking = shared["ranking"]
        result = ANoTResult(
            ranking=ranking,
            score_ranking=shared["score_ranking"],
            final_ranking=shared["final_ranking"],
            strategy=shared["strategy"],
            strategy_text=shared["strategy_text"],
            steps=shared["steps"],
            outputs=dict(shared["outputs"]),
            phase2=shared["phase2"],
            errors=[e for e in shared["errors"] if e],
            stats=stats,
            trace=trace,
            n_items=shared["n_items"],
        )
        self.last_result = result
        return result

    run_options = RUN_OPTIONS | {"items", "request_tag", "script"}
    required_run_options = frozenset({"items"})

    def __call__(self, query: str, items: Sequence[Any], *, request_tag: str = "R00", **options: Any) -> ANoTResult:
        """Rank ``items`` for ``query`` through the three phases."""
        return self.run_sync(query, items=items, request_tag=request_tag, **options)[0]

    async def arun(self, query: str, items: Sequence[Any], *, request_tag: str = "R00",
                   **options: Any) -> ANoTResult:
        """Rank ``items`` for ``query`` through the three phases; phase 3's layers run concurrently."""
        return (await self.arun_with_trace(query, items=items, request_tag=request_tag, **options))[0]

    async def astream(self, query: str, items: Sequence[Any] = (), **options: Any) -> Any:  # type: ignore[override]
        """Run and yield :class:`RunEvent`s (one ``node`` event per phase step), as every graph bot."""
        async for event in super().astream(query, items=items, **options):
            yield event

    def execute(
        self, script: str | Sequence[LWTStep], items: Sequence[Any], query: str = "", *, request_tag: str = "R00"
    ) -> ANoTResult:
        """Phase 3 only: run a given LWT script over ``items`` and rank. Raises an ``LWTError`` for a script
        that does not parse, has a cycle or references an unknown step."""
        return self.run_sync(query, items=items, script=script, request_tag=request_tag)[0]

    async def aexecute(
        self, script: str | Sequence[LWTStep], items: Sequence[Any], query: str = "", *, request_tag: str = "R00"
    ) -> ANoTResult:
        """Phase 3 only (see :meth:`execute`), each layer's steps at once."""
        return (await self.arun_with_trace(query, items=items, script=script, request_tag=request_tag))[0]

    def to_mermaid(self) -> MermaidDiagram:
        """The ANoT graph as a mermaid diagram, phase 2's agent nodes included."""
        return MermaidDiagram(to_mermaid(self.flow))


class AsyncANoTBot(AwaitedCall, ANoTBot):
    """The name kept for services (``await AsyncANoTBot(...).arun(query, items)``): the same bot as
    :class:`ANoTBot`."""

"""AoTBot: plan -> validate -> execute, as a PocketFlow graph built from the same node kinds as the agent.

    PlanNode -("valid")-> LayerNode            the decision (a structured plan) starts the execution
    PlanNode -("invalid")-> PlanNode           re-plan with the validation errors (bounded)
    LayerNode -("layer")-> LayerNode           one execution layer per visit (its atoms concurrently when async)
    LayerNode -("done")-> ReportNode           the final atom's answer; ends the run
    LayerNode -("failed")-> CompensateNode     undo completed atoms, newest first, then:
    CompensateNode -("replan")-> PlanNode      re-plan with the failure shown (bounded), else AtomExecutionError
    with samples=k > 1 (self-consistency): the run starts at DraftNode (the k first plans requested at once)
    -("drafted")-> PlanNode; ReportNode, and a sample that gave up, -("sample")-> PlanNode for the next sample
    (its drafted plan), and after the k-th -("vote")-> VoteNode: the majority answer of the executed plans

The nodes are in :mod:`~llamabot.reasoning.aot.nodes`. ``PlanNode`` is a decision-kind node (span kind ``decision``, like the agent's ``DecideNode``): one model call with
structured output (JSON constrained by a schema generated from the tools; a grammar on the embedded model),
parsed and validated. Each atom calls its tool through the agent's ``GatedCall``, as ``FuncNode`` does (the
approval gate, then the one tool-call logic), inside a ``tool_call`` span (kind ``atom``) that the run's hooks
and ``astream`` see as it happens. Nodes keep no per-run state: the plan, the execution record, the next layer's index, the failures and the finished samples are data in the
shared dict. A cancelled async run compensates the atoms that completed (the interrupted layer's included), as
:func:`~llamabot.reasoning.aot.execute.aexecute_plan` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llamabot.agents.graphbot import AwaitedCall, GraphBot
from llamabot.bot.options import bot_settings, not_a_model, strict_options
from llamabot.models.base import ChatModel
from llamabot.models.resolve import get_model
from llamabot.models.settings import ModelSettings
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Trace, current_run
from llamabot.observe.usage import UsageLimits
from llamabot.reasoning.aot.execute import LayerThreads, execute_plan
from llamabot.reasoning.aot.nodes import (
    THREADS,
    CompensateNode,
    DraftNode,
    LayerNode,
    PlanNode,
    ReportNode,
    VoteNode,
)
from llamabot.reasoning.aot.plan import Plan
from llamabot.reasoning.aot.prompts import resolve_expressions
from llamabot.reasoning.aot.record import AtomTools, ExecutionRecord, RetryPolicy
from llamabot.reasoning.aot.result import AoTResult, run_usage
from llamabot.reasoning.aot.samples import SAMPLE, VOTE, new_aot_state
from llamabot.reasoning.aot.validate import validate_plan
from llamabot.tools.approval import Approver
from llamabot.tools.output import checked_output, output_adapter
from llamabot.tools.tool import as_tool, tools_by_name

#: The temperature of the planner's calls when ``samples > 1`` and none is given (greedy decoding would write
#: the same plan k times).
SAMPLE_TEMPERATURE = 0.7


class AoTBot(GraphBot):
    """Atom of Thought: the model writes a plan of tool calls with explicit dependencies; a program validates
    and executes it. ``bot(question)`` returns an :class:`AoTResult`.

    ``tools`` (the one positional argument): ``@tool`` functions for ``kind: tool`` atoms (default: the
    calculator). ``model``, ``model_settings`` (``temperature``...), ``hooks``, ``usage_limits``: as for every bot;
    an unknown keyword is a ``TypeError``. ``approver``: decides on atoms whose tool requires approval
    (``approver(request) -> Decision | bool``); without one such an atom fails and its tool never runs (AoT runs
    do not pause). ``decisions``: tools for
    ``kind: decision`` atoms. ``max_replans``: re-plans after validation errors (then
    :class:`PlanValidationError`). ``max_execution_replans``: re-plans after an atom failed, the failure shown
    to the planner (then :class:`AtomExecutionError`, naming the atom and the cause, with the partial record
    and the earlier failures). ``retry``: the default retry policy of atoms. ``compensations``: tool name ->
    compensating ``@tool`` run (newest first) for completed atoms when a later atom fails or the run is
    cancelled. ``samples``: self-consistency, k plans sampled at once (at ``temperature``, default
    :data:`SAMPLE_TEMPERATURE`), all executed, the majority answer wins (ties: the earliest sample); 1 (the
    default) is one plan, greedy unless ``model_settings`` gives a ``temperature``. Only for tools without side effects (every
    sampled plan runs), so it refuses ``compensations``. ``subquestions``: the planner breaks the question into
    sub-questions, one per atom, each written in words before its tool call (``Atom.question``; the prompt and
    the schema ask for it); the program still computes everything. ``expressions``: atoms compute arithmetic
    expressions with the ``calculate`` tool (added to ``tools``; the default tools become just it), each atom one
    quantity written from the question's numbers and earlier results (``"<result_of_1> * 3"``); the program reads
    and computes each expression (:mod:`llamabot.toolkits.expression`, never ``eval``). Default (``None``): on
    with the default tools (it measured best, see the AoT design's evaluation results), off when you give your own
    ``tools`` or ask for ``subquestions``; ``expressions=False`` plans with the separate calculator tools.
    ``reasoning`` (default on: it measured best, see the AoT design): the plan opens with what the question asks
    and how it follows from the question's numbers, in words and computing nothing (``Plan.reasoning``, first in
    the schema, so the model writes it before any atom); ``reasoning=False`` asks for the atoms alone.
    ``output_type``: the result's ``answer`` is validated as this type (pydantic's lax mode: ``"437"`` is ``437``
    for ``int``), else :class:`StructuredOutputError`.
    """

    @strict_options
    def __init__(
        self,
        tools: Iterable[Any] | None = None,
        *,
        model: str | ChatModel | None = None,
        model_settings: ModelSettings | dict[str, Any] | None = None,
        decisions: Iterable[Any] = (),
        max_replans: int = 2,
        max_execution_replans: int = 1,
        samples: int = 1,
        subquestions: bool = False,
        expressions: bool | None = None,
        reasoning: bool = True,
        retry: RetryPolicy = RetryPolicy(),
        compensations: dict[str, Any] | None = None,
        hooks: Iterable[RunHooks] = (),
        usage_limits: UsageLimits | None = None,
        approver: Approver | None = None,
        output_type: Any = None,
    ):
        super().__init__(hooks=hooks, usage_limits=usage_limits, approver=approver)
        not_a_model(type(self).__name__, "tools", tools)
        self.output_adapter = output_adapter(output_type) if output_type is not None else None
        if isinstance(tools, (str, bytes)):
            raise TypeError(f"{type(self).__name__}(tools=...) takes an iterable of tools, got a string")
        completion_kwargs = bot_settings(self, model_settings)
        self.model_settings = completion_kwargs
        _check_options(max_replans, max_execution_replans, samples, compensations, completion_kwargs)
        expressions = resolve_expressions(expressions, tools, subquestions)
        from llamabot.toolkits.calculator import CALCULATOR_TOOLS, EXPRESSION_TOOLS

        arithmetic = tools is None  # the default tools: only the question's numbers may be written (literals.py)
        if tools is None:
            tools = EXPRESSION_TOOLS if expressions else CALCULATOR_TOOLS
        self.tools = tools_by_name(tools)
        if expressions:
            self.tools = {**tools_by_name(EXPRESSION_TOOLS), **self.tools}  # calculate, first, unless given
        self.decisions = tools_by_name(decisions)
        self.compensations = {name: as_tool(t) for name, t in (compensations or {}).items()}
        unknown = set(self.compensations) - set(self.tools) - set(self.decisions)
        if unknown:
            raise ValueError(f"compensations name tools that are not registered: {sorted(unknown)}")
        self.model = get_model(model)
        self.samples = samples
        if samples > 1:
            completion_kwargs = {"temperature": SAMPLE_TEMPERATURE, **completion_kwargs}
        self.plan_node = PlanNode(
            self.model,
            self.tools,
            self.decisions,
            max_replans=max_replans,
            completion_kwargs=completion_kwargs,
            samples=samples,
            questions=subquestions,
            expressions=expressions,
            reasoning=reasoning,
            literals=arithmetic,
        )
        atom_tools = AtomTools(self.tools, self.decisions, retry, self.compensations)
        self.execute_node = LayerNode(atom_tools)
        self.report_node = ReportNode(samples)
        self.compensate_node = CompensateNode(
            atom_tools, max_execution_replans=max_execution_replans, samples=samples
        )
        self.plan_node - "valid" >> self.execute_node
        self.plan_node - "invalid" >> self.plan_node
        self.execute_node - "layer" >> self.execute_node
        self.execute_node - "done" >> self.report_node
        self.execute_node - "failed" >> self.compensate_node
        self.compensate_node - "replan" >> self.plan_node
        start: Any = self.plan_node
        if samples > 1:
            self.vote_node = VoteNode()
            for node in (self.plan_node, self.report_node, self.compensate_node):
                node - SAMPLE >> self.plan_node
                node - VOTE >> self.vote_node
            start = self.draft_node = DraftNode(self.plan_node, samples)
            self.draft_node - "drafted" >> self.plan_node
        self.set_graph(start)

    def run_attributes(self, question: str) -> dict[str, Any]:
        return {"question": question}

    def run_values(self, options: dict[str, Any]) -> dict[str, Any]:
        return {THREADS: LayerThreads()}  # made on first need, shut down when the run ends

    def failed(self, state: dict[str, Any], error: BaseException) -> None:
        _close_threads()

    def new_state(self, question: str, trace: Trace, options: dict[str, Any]) -> dict[str, Any]:
        return new_aot_state(question)

    def result(self, shared: dict[str, Any], trace: Trace) -> AoTResult:
        _close_threads()
        record: ExecutionRecord = shared["record"]
        votes = shared["vote"]["votes"] if shared["vote"] else 1
        answer = record.answer
        if self.output_adapter is not None:  # output_type=: the computed answer, validated (lax: "437" -> 437)
            answer = checked_output(self.output_adapter, answer, "the plan's final atom")
        return AoTResult(
            answer,
            shared["plan"],
            record,
            trace,
            len(shared["plan_errors"]),
            shared["plan_errors"],
            shared["notes"],
            run_usage(trace),
            shared["parse_failures"],
            list(shared["execution_failures"]),
            list(shared["samples"]),
            votes,
        )


def _check_options(
    max_replans: int,
    max_execution_replans: int,
    samples: int,
    compensations: Any,
    completion_kwargs: dict[str, Any],
) -> None:
    """Refuse options that cannot work, naming the option and what to do."""
    if max_replans < 0 or max_execution_replans < 0:
        raise ValueError(
            f"max_replans and max_execution_replans must be at least 0, got {max_replans} and "
            f"{max_execution_replans}"
        )
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    if samples > 1 and compensations:
        raise ValueError(
            "samples > 1 executes every sampled plan, so it is only for tools without side effects; "
            "it cannot be combined with compensations"
        )
    temperature = completion_kwargs.get("temperature")
    if samples > 1 and temperature is not None and temperature <= 0:
        raise ValueError(
            f"samples={samples} needs temperature > 0 (got {temperature}): greedy decoding writes the "
            "same plan every time"
        )


def _close_threads() -> None:
    run = current_run()
    threads = None if run is None else run.values.get(THREADS)
    if threads is not None:
        threads.close()


class AsyncAoTBot(AwaitedCall, AoTBot):
    """The name kept for services (``await AsyncAoTBot().arun(question)``): the same bot as :class:`AoTBot`; on
    the async path the atoms of a layer run concurrently."""


def replay_plan(
    plan: Plan | dict[str, Any] | str,
    tools: Iterable[Any] | None = None,
    decisions: Iterable[Any] = (),
    **kwargs: Any,
) -> ExecutionRecord:
    """Validate and execute a saved plan again, without any model (``llamabot aot --replay``)."""
    if tools is None:  # the calculator, as separate tools and as ``calculate`` (a plan may use either)
        from llamabot.toolkits.calculator import CALCULATOR_TOOLS, EXPRESSION_TOOLS

        tools = (*CALCULATOR_TOOLS, *EXPRESSION_TOOLS)
    registry, decision_registry = tools_by_name(tools), tools_by_name(decisions)
    plan = plan if isinstance(plan, Plan) else Plan.load(plan if isinstance(plan, dict) else str(plan))
    validated, _ = validate_plan(plan, registry, decision_registry)
    return execute_plan(validated, registry, decision_registry, **kwargs)


__all__ = [
    "AoTBot",
    "AoTResult",
    "AsyncAoTBot",
    "CompensateNode",
    "LayerNode",
    "PlanNode",
    "ReportNode",
    "VoteNode",
    "replay_plan",
]

"""AoTBot: plan -> validate -> execute, as a PocketFlow graph built from the same node kinds as the agent.

    PlanNode -("valid")-> LayerNode            the decision (a structured plan) starts the execution
    PlanNode -("invalid")-> PlanNode           re-plan with the validation errors (bounded)
    LayerNode -("layer")-> LayerNode           one execution layer per visit (its atoms concurrently when async)
    LayerNode -("done")-> ReportNode           the final atom's answer; ends the run
    LayerNode -("failed")-> CompensateNode     undo completed atoms, newest first; raises AtomExecutionError

``PlanNode`` is a decision-kind node (span kind ``decision``, like the agent's ``DecideNode``): one model call with
structured output (JSON constrained by a schema generated from the tools; a grammar on the embedded model),
parsed and validated. Each atom runs as ``FuncNode`` runs a tool: the one tool-call logic, inside a ``tool_call``
span (kind ``atom``) that the run's hooks and ``astream`` see as it happens. Nodes keep no per-run state: the
plan, the execution record and the next layer's index are data in the shared dict.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from loguru import logger
from pydantic import ValidationError

from llamabot.graph.flow import DualNode
from llamabot.graph.graphbot import GraphBot
from llamabot.graph.mermaid import MermaidDiagram
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.models.messages import Message, assistant, system, user
from llamabot.models.reply import ModelRequest, Usage
from llamabot.models.seam import ChatModel, get_model
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Trace, current_run, current_span
from llamabot.reasoning.aot.execute import (
    AtomRecord,
    AtomTools,
    CompensationCall,
    ExecutionRecord,
    LayerThreads,
    RetryPolicy,
    apply_compensations,
    apply_layer,
    arun_compensations,
    arun_layer,
    compensation_calls,
    execute_plan,
    execution_error,
    finish,
    layer_atoms,
    new_record,
    next_layer,
    run_compensations,
    run_layer,
)
from llamabot.reasoning.aot.plan import Plan
from llamabot.reasoning.aot.prompts import REPLAN_MESSAGE, planner_prompt
from llamabot.reasoning.aot.schema import plan_response_format
from llamabot.reasoning.aot.validate import PlanIssue, PlanValidationError, validate_plan
from llamabot.reasoning.aot.visualization import plan_to_mermaid
from llamabot.tools.tool import Tool, as_tool


@dataclass(slots=True)
class AoTResult:
    """What an AoT run produced: the answer, the (validated) plan, the execution record and the trace."""

    answer: Any
    plan: Plan
    record: ExecutionRecord
    trace: Trace
    replans: int = 0
    plan_errors: list[list[str]] = field(default_factory=list)  # the errors of each rejected plan
    notes: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    parse_failures: int = 0  # replies that were not a parseable plan (zero under the embedded model's grammar)

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.record.to_dict()["answer"],
            "plan": self.plan.to_dict(),
            "record": self.record.to_dict(),
            "replans": self.replans,
            "parse_failures": self.parse_failures,
            "plan_errors": self.plan_errors,
            "notes": self.notes,
            "trace_id": self.trace.trace_id,
        }

    def to_mermaid(self) -> MermaidDiagram:
        return MermaidDiagram(plan_to_mermaid(self.plan, self.record))


def _tools_by_name(items: Iterable[Any]) -> dict[str, Tool]:
    return {t.name: t for t in (as_tool(i) for i in items)}


@dataclass(slots=True)
class PlanInput:
    messages: list[Message]
    attempt: int  # 1 for the first plan, 2 for the first re-plan...


class PlanNode(DualNode):
    """The decision-kind node of AoT: ask the model for a plan (structured output: schema-constrained JSON),
    parse and validate it. Its steps are ``decision`` spans named ``plan`` (attributes ``iteration``: the
    attempt, ``calls``: the atoms a valid plan will run as ``"id:name"``, ``errors``: a rejected plan's
    problems), so ``astream`` reports them as ``decision`` events. A valid plan starts the execution state."""

    name = "plan"
    span_kind = "decision"

    def __init__(self, model: ChatModel, tools: dict[str, Tool], decisions: dict[str, Tool], *, max_replans: int,
                 completion_kwargs: dict[str, Any]):
        super().__init__()
        self.model, self.tools, self.decisions = model, tools, decisions
        self.max_replans = max_replans
        self.system = system(planner_prompt(tools, decisions))
        self.response_format = plan_response_format(tools, decisions)
        self.completion_kwargs = completion_kwargs

    def prep(self, shared: dict[str, Any]) -> PlanInput:
        return PlanInput([self.system, *shared["memory"]], len(shared["plan_errors"]) + 1)

    def span_attributes(self, inp: PlanInput) -> dict[str, Any]:
        return {"iteration": inp.attempt}

    def _exchange(self, inp: PlanInput) -> Exchange[tuple[str | None, Plan | None, list[str], list[PlanIssue]]]:
        reply = yield ModelRequest(self.model.name, inp.messages, response_format=self.response_format,
                                   params=self.completion_kwargs)
        raw = reply.content
        try:
            plan = Plan.model_validate_json(raw or "")
        except ValidationError as exc:
            problems = [f"{'.'.join(str(p) for p in e['loc']) or 'plan'}: {e['msg']}" for e in exc.errors(include_url=False)]
            return raw, None, [], [PlanIssue(None, "malformed", "; ".join(problems[:5]))]
        try:
            plan, notes = validate_plan(plan, self.tools, self.decisions)
        except PlanValidationError as exc:
            return raw, plan, [], exc.errors
        return raw, plan, notes, []

    def exec(self, inp: PlanInput) -> Any:
        return run_exchange(self._exchange(inp), self.model)

    async def exec_async(self, inp: PlanInput) -> Any:
        return await arun_exchange(self._exchange(inp), self.model)

    def post(self, shared: dict[str, Any], inp: PlanInput, outcome: Any) -> str:
        raw, plan, notes, issues = outcome
        opened = current_span()
        if not issues:
            record = new_record(plan)
            shared["plan"], shared["notes"] = plan, notes
            shared["record"], shared["layer"] = record, next_layer(record, 0)
            calls = [f"{a.id}:{a.name}" for a in plan.atoms if a.kind != "final"]
            if opened is not None:
                opened.attributes.update(calls=calls, layers=record.layers)
            logger.debug("plan {}: valid, {} atoms in {} layers {}; notes {}", inp.attempt, len(plan.atoms),
                         len(record.layers), record.layers, notes)
            return "valid"
        errors = [str(i) for i in issues]
        if opened is not None:
            opened.attributes.update(calls=[], errors=errors)
        shared["plan_errors"].append(errors)
        shared["parse_failures"] += any(i.code == "malformed" for i in issues)
        if len(shared["plan_errors"]) > self.max_replans:
            logger.debug("plan {}: invalid, no re-plans left: {}", inp.attempt, errors)
            raise PlanValidationError(plan, issues, raw)
        logger.debug("plan {}: invalid, re-planning with {} problems: {}", inp.attempt, len(errors), errors)
        shared["memory"] += [assistant(raw or ""), user(REPLAN_MESSAGE.format(errors="\n".join(f"- {e}" for e in errors)))]
        return "invalid"


@dataclass(slots=True)
class LayerInput:
    index: int
    record: ExecutionRecord


#: The run value holding the run's :class:`LayerThreads`.
THREADS = "aot_threads"


class LayerNode(DualNode):
    """Run one execution layer per visit, then loop to itself (``"layer"``) until the last one (``"done"``), or
    stop at a failed layer (``"failed"``). Each atom is a ``tool_call`` span of kind ``atom`` (see
    :func:`llamabot.reasoning.aot.execute.run_atom`): in id order on the sync path, stopping at the first failure;
    all at once on the async path (``asyncio.gather``), the layer always finishing. The step's span is kind
    ``layer`` with attributes ``layer`` (the index) and ``atoms`` (their ids)."""

    name = "execute"
    span_kind = "layer"

    def __init__(self, tools: AtomTools):
        super().__init__()
        self.tools = tools

    def prep(self, shared: dict[str, Any]) -> LayerInput:
        return LayerInput(shared["layer"], shared["record"])

    def span_attributes(self, inp: LayerInput) -> dict[str, Any]:
        return {"layer": inp.index, "atoms": [a.id for a in layer_atoms(inp.record, inp.index)]}

    def exec(self, inp: LayerInput) -> tuple[list[AtomRecord], float]:
        started = time.perf_counter()
        return run_layer(self.tools, inp.record, inp.index), time.perf_counter() - started

    async def exec_async(self, inp: LayerInput) -> tuple[list[AtomRecord], float]:
        started = time.perf_counter()
        run = current_run()
        threads = None if run is None else run.values.get(THREADS)  # the run's own pool (AoTBot.run_values)
        return await arun_layer(self.tools, inp.record, inp.index, threads), time.perf_counter() - started

    def post(self, shared: dict[str, Any], inp: LayerInput, outcome: tuple[list[AtomRecord], float]) -> str:
        done, duration = outcome
        record: ExecutionRecord = shared["record"]
        ok = apply_layer(record, done, duration)
        logger.debug("layer {}: {}", inp.index, ", ".join(
            f"{r.id}:{r.name} = {r.result!r}" if r.status == "ok" else f"{r.id}:{r.name} failed: {r.error}" for r in done))
        if not ok:
            return "failed"
        shared["layer"] = next_layer(record, inp.index + 1)
        return "layer" if shared["layer"] < len(record.layers) else "done"


class ReportNode(DualNode):
    """The final atom: what it reports becomes the answer (nothing is called); ends the run."""

    name = "report"
    span_kind = "report"
    terminal = True

    def prep(self, shared: dict[str, Any]) -> None:
        return None

    def exec(self, prep_res: None) -> None:
        return None

    def post(self, shared: dict[str, Any], prep_res: None, exec_res: None) -> None:
        record = finish(shared["record"])
        logger.debug("answer {!r}", record.answer)
        return None


class CompensateNode(DualNode):
    """After a failed layer: undo every completed atom whose tool has a compensator, newest first (one
    ``tool_call`` span of kind ``compensation`` each), then raise :class:`AtomExecutionError` with the record."""

    name = "compensate"
    span_kind = "compensate"
    terminal = True

    def __init__(self, tools: AtomTools):
        super().__init__()
        self.tools = tools

    def prep(self, shared: dict[str, Any]) -> list[CompensationCall]:
        return compensation_calls(self.tools, shared["record"])

    def span_attributes(self, calls: list[CompensationCall]) -> dict[str, Any]:
        return {"atoms": [c.atom for c in calls]}

    def exec(self, calls: list[CompensationCall]) -> tuple[list[str | None], float]:
        started = time.perf_counter()
        return run_compensations(self.tools, calls), time.perf_counter() - started

    async def exec_async(self, calls: list[CompensationCall]) -> tuple[list[str | None], float]:
        started = time.perf_counter()
        return await arun_compensations(self.tools, calls), time.perf_counter() - started

    def post(self, shared: dict[str, Any], calls: list[CompensationCall],
             outcome: tuple[list[str | None], float]) -> None:
        record: ExecutionRecord = shared["record"]
        apply_compensations(record, calls, *outcome)
        for call, error in zip(calls, outcome[0], strict=True):
            logger.debug("compensated atom {} with {}: {}", call.atom, call.compensator, error or "ok")
        raise execution_error(record)


class AoTBot(GraphBot):
    """Atom of Thought: the model writes a plan of tool calls with explicit dependencies; a program validates
    and executes it. ``bot(question)`` returns an :class:`AoTResult`.

    ``tools``: ``@tool`` functions for ``kind: tool`` atoms (default: the calculator). ``decisions``: tools for
    ``kind: decision`` atoms. ``max_replans``: re-plans after validation errors (then
    :class:`PlanValidationError`). ``retry``: the default retry policy of atoms. ``compensations``: tool name ->
    compensating ``@tool`` run (newest first) for completed atoms when a later atom fails. Execution failures
    raise :class:`AtomExecutionError` with the partial record.
    """

    def __init__(
        self,
        tools: Iterable[Any] | None = None,
        model_name: str | ChatModel | None = None,
        *,
        decisions: Iterable[Any] = (),
        max_replans: int = 2,
        retry: RetryPolicy = RetryPolicy(),
        compensations: dict[str, Any] | None = None,
        hooks: Iterable[RunHooks] = (),
        **completion_kwargs: Any,
    ):
        super().__init__(hooks=hooks)
        if tools is None:
            from llamabot.toolkits.calculator import CALCULATOR_TOOLS

            tools = CALCULATOR_TOOLS
        self.tools = _tools_by_name(tools)
        self.decisions = _tools_by_name(decisions)
        self.compensations = {name: as_tool(t) for name, t in (compensations or {}).items()}
        unknown = set(self.compensations) - set(self.tools) - set(self.decisions)
        if unknown:
            raise ValueError(f"compensations name tools that are not registered: {sorted(unknown)}")
        self.model = get_model(model_name)
        self.plan_node = PlanNode(self.model, self.tools, self.decisions, max_replans=max_replans,
                                  completion_kwargs=completion_kwargs)
        atom_tools = AtomTools(self.tools, self.decisions, retry, self.compensations)
        self.execute_node = LayerNode(atom_tools)
        self.report_node = ReportNode()
        self.compensate_node = CompensateNode(atom_tools)
        self.plan_node - "valid" >> self.execute_node
        self.plan_node - "invalid" >> self.plan_node
        self.execute_node - "layer" >> self.execute_node
        self.execute_node - "done" >> self.report_node
        self.execute_node - "failed" >> self.compensate_node
        self.set_graph(self.plan_node)

    def run_attributes(self, question: str) -> dict[str, Any]:
        return {"question": question}

    def run_values(self, options: dict[str, Any]) -> dict[str, Any]:
        return {THREADS: LayerThreads()}  # made on first need, shut down when the run ends

    def failed(self, state: dict[str, Any], error: BaseException) -> None:
        _close_threads()

    def new_state(self, question: str, trace: Trace, options: dict[str, Any]) -> dict[str, Any]:
        return {"memory": [user(question)], "plan": None, "notes": [], "plan_errors": [], "parse_failures": 0,
                "record": None, "layer": 0}

    def result(self, shared: dict[str, Any], trace: Trace) -> AoTResult:
        _close_threads()
        usage = Usage()
        for s in trace.of_kind("model_call"):
            if "reply" in s.attributes:
                usage = usage + s.attributes["reply"].usage
        record: ExecutionRecord = shared["record"]
        return AoTResult(record.answer, shared["plan"], record, trace, len(shared["plan_errors"]),
                         shared["plan_errors"], shared["notes"], usage, shared["parse_failures"])



def _close_threads() -> None:
    run = current_run()
    threads = None if run is None else run.values.get(THREADS)
    if threads is not None:
        threads.close()


class AsyncAoTBot(AoTBot):
    """The name kept for services (``await AsyncAoTBot().arun(question)``): the same bot as :class:`AoTBot`; on
    the async path the atoms of a layer run concurrently."""


def replay_plan(plan: Plan | dict[str, Any] | str, tools: Iterable[Any] | None = None, decisions: Iterable[Any] = (),
                **kwargs: Any) -> ExecutionRecord:
    """Validate and execute a saved plan again, without any model (``llamabot aot --replay``)."""
    if tools is None:
        from llamabot.toolkits.calculator import CALCULATOR_TOOLS

        tools = CALCULATOR_TOOLS
    registry, decision_registry = _tools_by_name(tools), _tools_by_name(decisions)
    plan = plan if isinstance(plan, Plan) else Plan.load(plan if isinstance(plan, dict) else str(plan))
    validated, _ = validate_plan(plan, registry, decision_registry)
    return execute_plan(validated, registry, decision_registry, **kwargs)


__all__ = ["AoTBot", "AoTResult", "AsyncAoTBot", "CompensateNode", "LayerNode", "PlanNode", "ReportNode", "replay_plan"]

"""AoTBot: plan -> validate -> execute, as a PocketFlow graph built from the same node kind as the agent.

    PlanNode -("valid")-> ExecuteNode              ExecuteNode ends the run with the answer
    PlanNode -("invalid")-> PlanNode               re-plan with the validation errors (bounded)

The plan comes from the model as JSON constrained by a schema generated from the tools (a grammar on the
embedded model); validation and execution are pure and deterministic. Nodes keep no per-run state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.graph.flow import DualNode
from llamabot.graph.mermaid import MermaidDiagram
from llamabot.models.messages import Message, assistant, system, user
from llamabot.models.reply import ModelRequest, Usage
from llamabot.models.seam import ChatModel, get_model
from llamabot.reasoning.aot.execute import (
    AtomExecutionError,
    ExecutionRecord,
    RetryPolicy,
    aexecute_plan,
    execute_plan,
)
from llamabot.reasoning.aot.plan import Plan
from llamabot.reasoning.aot.prompts import REPLAN_MESSAGE, planner_prompt
from llamabot.reasoning.aot.schema import plan_response_format
from llamabot.reasoning.aot.validate import PlanIssue, PlanValidationError, validate_plan
from llamabot.reasoning.aot.visualization import plan_to_mermaid
from llamabot.tools.tool import Tool, as_tool
from llamabot.graph.graphbot import GraphBot
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Trace, current_span, current_trace


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


class PlanNode(DualNode):
    """Ask the model for a plan (schema-constrained JSON), parse and validate it."""

    name = "plan"

    def __init__(self, model: ChatModel, tools: dict[str, Tool], decisions: dict[str, Tool], *, max_replans: int,
                 completion_kwargs: dict[str, Any]):
        super().__init__()
        self.model, self.tools, self.decisions = model, tools, decisions
        self.max_replans = max_replans
        self.system = system(planner_prompt(tools, decisions))
        self.response_format = plan_response_format(tools, decisions)
        self.completion_kwargs = completion_kwargs

    def prep(self, shared: dict[str, Any]) -> PlanInput:
        return PlanInput([self.system, *shared["memory"]])

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
        if not issues:
            shared["plan"], shared["notes"] = plan, notes
            return "valid"
        errors = [str(i) for i in issues]
        shared["plan_errors"].append(errors)
        shared["parse_failures"] += any(i.code == "malformed" for i in issues)
        if len(shared["plan_errors"]) > self.max_replans:
            raise PlanValidationError(plan, issues, raw)
        shared["memory"] += [assistant(raw or ""), user(REPLAN_MESSAGE.format(errors="\n".join(f"- {e}" for e in errors)))]
        return "invalid"


class ExecuteNode(DualNode):
    """Run the validated plan: layers in order, atoms of a layer concurrently on the async path."""

    name = "execute"

    def __init__(self, tools: dict[str, Tool], decisions: dict[str, Tool], *, retry: RetryPolicy,
                 compensations: dict[str, Tool]):
        super().__init__()
        self.tools, self.decisions, self.retry, self.compensations = tools, decisions, retry, compensations

    def prep(self, shared: dict[str, Any]) -> Plan:
        return shared["plan"]

    def exec(self, plan: Plan) -> ExecutionRecord:
        try:
            return execute_plan(plan, self.tools, self.decisions, retry=self.retry, compensations=self.compensations)
        except AtomExecutionError as exc:
            _trace_atoms(exc.record)
            raise

    async def exec_async(self, plan: Plan) -> ExecutionRecord:
        try:
            return await aexecute_plan(plan, self.tools, self.decisions, retry=self.retry,
                                       compensations=self.compensations)
        except AtomExecutionError as exc:
            _trace_atoms(exc.record)
            raise

    def post(self, shared: dict[str, Any], plan: Plan, record: ExecutionRecord) -> None:
        shared["record"] = record
        _trace_atoms(record)
        return None


def _trace_atoms(record: ExecutionRecord) -> None:
    """One ``atom`` span per executed atom under the active span (the executor itself stays pure)."""
    trace, parent = current_trace(), current_span()
    if trace is None:
        return
    for atom in record.atoms.values():
        if atom.status == "not_run" or atom.kind == "final":
            continue
        span = trace.open(f"{atom.id}:{atom.name}", "atom", parent, atom_kind=atom.kind, inputs=atom.inputs,
                          result=atom.result, attempts=atom.attempts, status=atom.status)
        span.start, span.end, span.error = atom.started, atom.started + atom.duration_s, atom.error


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
        self.execute_node = ExecuteNode(self.tools, self.decisions, retry=retry, compensations=self.compensations)
        self.plan_node - "valid" >> self.execute_node
        self.plan_node - "invalid" >> self.plan_node
        self.set_graph(self.plan_node)

    def run_attributes(self, question: str) -> dict[str, Any]:
        return {"question": question}

    def new_state(self, question: str, trace: Trace, options: dict[str, Any]) -> dict[str, Any]:
        return {"memory": [user(question)], "plan": None, "record": None, "plan_errors": [], "notes": [],
                "parse_failures": 0}

    def result(self, shared: dict[str, Any], trace: Trace) -> AoTResult:
        usage = Usage()
        for s in trace.of_kind("model_call"):
            if "reply" in s.attributes:
                usage = usage + s.attributes["reply"].usage
        record: ExecutionRecord = shared["record"]
        return AoTResult(record.answer, shared["plan"], record, trace, len(shared["plan_errors"]),
                         shared["plan_errors"], shared["notes"], usage, shared["parse_failures"])



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


__all__ = ["AoTBot", "AoTResult", "AsyncAoTBot", "ExecuteNode", "PlanNode", "replay_plan"]

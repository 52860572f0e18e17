"""The nodes of the AoT graph (all :class:`DualNode`s: ``prep``/``post`` once, ``exec`` twins); the graph they
form is drawn in :mod:`llamabot.reasoning.aot.graph`.

- :class:`PlanNode`: the decision: one model call for a plan (the agents' structured node: schema-constrained
  JSON parsed as a :class:`Plan`), then validated. :class:`DraftNode`: with ``samples > 1``, every sample's
  first plan requested at once.
- :class:`LayerNode`: one execution layer per visit (the agents' layer node); a cancelled async layer compensates
  what completed.
- :class:`ReportNode`: the final atom's answer. :class:`VoteNode`: the majority answer of the samples.
- :class:`CompensateNode`: after a failed layer, undo completed atoms, then re-plan with the failure or give up.

Nodes keep no per-run state (see :mod:`llamabot.reasoning.aot.samples` for the keys of the shared dict).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from loguru import logger

from llamabot.agents import layer
from llamabot.agents.structured import Parsed, StructuredNode
from llamabot.bot.structuredbot import StructuredBot
from llamabot.graph.flow import DualNode
from llamabot.models.base import ChatModel
from llamabot.models.exchange import Exchange, answered, arun_exchange, reply_to, run_exchange
from llamabot.models.messages import Message, assistant, system, user
from llamabot.models.reply import ModelReply, ModelRequest
from llamabot.observe.tracing import current_run, current_span
from llamabot.reasoning.aot.compensate import (
    CompensationCall,
    apply_compensations,
    arun_compensations,
    compensation_calls,
    execution_error,
    failure_summary,
    finish,
    run_compensations,
)
from llamabot.reasoning.aot.execute import (
    LAYER_LIMIT,
    LayerInput,
    alayer_atom,
    apply_layer,
    compensate_cancelled,
    layer_atom,
    layer_input,
    new_record,
    next_layer,
)
from llamabot.reasoning.aot.literals import question_numbers
from llamabot.reasoning.aot.plan import Atom, Plan
from llamabot.reasoning.aot.prompts import EXECUTION_FAILED_MESSAGE, REPLAN_MESSAGE, planner_prompt
from llamabot.reasoning.aot.record import AtomRecord, AtomTools, ExecutionRecord
from llamabot.reasoning.aot.samples import sample_failed, sample_finished, vote
from llamabot.reasoning.aot.schema import plan_response_format
from llamabot.reasoning.aot.validate import PlanIssue, PlanValidationError, validate_plan
from llamabot.tools.tool import Tool


@dataclass(slots=True)
class PlanInput:
    messages: list[Message]
    attempt: int  # 1 for the first plan, 2 for the first re-plan...
    draft: dict[str, Any] | None = None  # the reply drafted for this sample's first plan (ModelReply.to_dict())


class PlanNode(StructuredNode[Plan]):
    """The decision-kind node of AoT: ask the model for a plan (the agents' :class:`StructuredNode`: one
    schema-constrained JSON answer parsed as a :class:`Plan`, no repair inside the step), then validate it
    (:func:`validate_plan`: tools, inputs, references, cycles). A malformed plan and a plan that fails validation
    both go back to the model as a re-plan (``"invalid"``, the planner's own loop). Its steps are ``decision``
    spans named ``plan`` (attributes ``iteration``: the attempt, ``calls``: the atoms a valid plan will run as
    ``"id:name"``, ``errors``: a rejected plan's problems), so ``astream`` reports them as ``decision`` events.
    A valid plan starts the execution state. After ``max_replans`` rejected plans the sample gives up:
    :class:`PlanValidationError` (or, with ``samples > 1``, the next sample; see
    :mod:`~llamabot.reasoning.aot.samples`)."""

    name = "plan"
    span_kind = "decision"
    keep_failures = True  # a malformed plan is re-planned with the others, under max_replans

    def __init__(
        self,
        model: ChatModel,
        tools: dict[str, Tool],
        decisions: dict[str, Tool],
        *,
        max_replans: int,
        completion_kwargs: dict[str, Any],
        samples: int = 1,
        questions: bool = False,
        expressions: bool = False,
        reasoning: bool = False,
        literals: bool = False,
    ):
        super().__init__(StructuredBot(output_type=Plan, model=model, model_settings=completion_kwargs, max_repairs=0))
        self.bot.response_format = plan_response_format(tools, decisions, questions=questions, reasoning=reasoning)
        self.model, self.tools, self.decisions = model, tools, decisions
        self.max_replans = max_replans
        self.samples = samples
        self.literals = literals  # only the question's numbers (and small constants) may be written
        self.system = system(planner_prompt(tools, decisions, questions=questions, expressions=expressions,
                                                    reasoning=reasoning))

    def prep(self, shared: dict[str, Any]) -> PlanInput:
        attempt = len(shared["plan_errors"]) + len(shared["execution_failures"]) + 1
        drafts, sample = shared.get("drafts") or [], len(shared["samples"])  # none in runs saved before drafts
        draft = drafts[sample] if attempt == 1 and sample < len(drafts) else None
        return PlanInput([self.system, *shared["memory"]], attempt, draft)

    def first_request(self, shared: dict[str, Any]) -> ModelRequest:
        """The request of a sample's first plan (what :class:`DraftNode` sends once per sample)."""
        exchange = self._exchange(self.prep(shared))
        request = next(exchange)
        exchange.close()
        return request

    def _exchange(self, inp: PlanInput) -> Exchange[Parsed[Plan]]:
        """The structured node's exchange; a sample's first plan has its request answered by its draft."""
        exchange = super()._exchange(inp)
        return exchange if inp.draft is None else answered(exchange, ModelReply.from_dict(inp.draft))

    def span_attributes(self, inp: PlanInput) -> dict[str, Any]:
        return {"iteration": inp.attempt}

    def messages(self, inp: PlanInput) -> list[Message]:
        return inp.messages

    def _checked(self, parsed: Parsed[Plan], question: str) -> tuple[Plan | None, list[str], list[PlanIssue]]:
        """The plan, its notes and its problems: a malformed answer's parse errors, else :func:`validate_plan`'s."""
        if parsed.error is not None:
            return None, [], [PlanIssue(None, "malformed", "; ".join(parsed.error.errors[:5]))]
        allowed = question_numbers(question) if self.literals else None
        try:
            plan, notes = validate_plan(parsed.value, self.tools, self.decisions, literals=allowed)
        except PlanValidationError as exc:
            return parsed.value, [], exc.errors
        return plan, notes, []

    def post(self, shared: dict[str, Any], inp: PlanInput, parsed: Parsed[Plan]) -> str:
        raw = parsed.raw
        plan, notes, issues = self._checked(parsed, shared["memory"][0]["content"] if self.literals else "")
        opened = current_span()
        if not issues:
            record = new_record(plan)
            shared["plan"], shared["notes"] = plan, notes
            shared["record"], shared["layer"] = record, next_layer(record, 0)
            calls = [f"{a.id}:{a.name}" for a in plan.atoms if a.kind != "final"]
            if opened is not None:
                opened.attributes.update(calls=calls, layers=record.layers)
            logger.debug(
                "plan {}: valid, {} atoms in {} layers {}; notes {}",
                inp.attempt,
                len(plan.atoms),
                len(record.layers),
                record.layers,
                notes,
            )
            return "valid"
        errors = [str(i) for i in issues]
        if opened is not None:
            opened.attributes.update(calls=[], errors=errors)
        shared["plan_errors"].append(errors)
        shared["parse_failures"] += any(i.code == "malformed" for i in issues)
        if len(shared["plan_errors"]) > self.max_replans:
            logger.debug("plan {}: invalid, no re-plans left: {}", inp.attempt, errors)
            error = PlanValidationError(plan, issues, raw)
            action = sample_failed(shared, self.samples, str(error))
            if action is None:
                raise error
            return action
        logger.debug("plan {}: invalid, re-planning with {} problems: {}", inp.attempt, len(errors), errors)
        shared["memory"] += [
            assistant(raw or ""),
            user(REPLAN_MESSAGE.format(errors="\n".join(f"- {e}" for e in errors))),
        ]
        return "invalid"


class DraftNode(layer.LayerNode):
    """Self-consistency's first plans, drafted at once: the first request of every sample's planner (the same
    request, sampled at a temperature) sent ``samples`` times concurrently (worker threads in a sync flow, tasks
    in an async one, one at a time in a durable run), so the embedded model decodes them in one batch. Each
    sample's first :class:`PlanNode` visit then reads its draft instead of calling the model (the same parsing,
    validation and routing); re-plans call the model as before. Then ``"drafted"``."""

    name = "draft"

    def __init__(self, plan_node: PlanNode, samples: int):
        super().__init__(samples)  # every sample's request at once: the layer's limit is the sample count
        self.plan_node = plan_node

    def prep(self, shared: dict[str, Any]) -> ModelRequest:
        return self.plan_node.first_request(shared)

    def span_attributes(self, request: ModelRequest) -> dict[str, Any]:
        return {"samples": self.limit}

    def items(self, request: ModelRequest) -> range:
        return range(self.limit)

    def run_item(self, request: ModelRequest, _: int) -> ModelReply:
        return run_exchange(reply_to(request), self.plan_node.model, self.plan_node.bot.stream_target)

    async def arun_item(self, request: ModelRequest, _: int) -> ModelReply:
        return await arun_exchange(reply_to(request), self.plan_node.model, self.plan_node.bot.stream_target)

    def post(self, shared: dict[str, Any], request: ModelRequest, replies: list[ModelReply]) -> str:
        shared["drafts"] = [reply.to_dict() for reply in replies]
        return "drafted"


#: The run value holding the run's :class:`LayerThreads`.
THREADS = "aot_threads"


class LayerNode(layer.LayerNode):
    """Run one execution layer per visit, then loop to itself (``"layer"``) until the last one (``"done"``), or
    stop at a failed layer (``"failed"``). The layer is the agents' :class:`~llamabot.agents.layer.LayerNode`:
    every atom runs, all at once (worker threads in a sync flow, tasks in an async one; the same atoms run and
    fail either way). Each atom is a ``tool_call`` span of kind ``atom`` (see
    :func:`llamabot.reasoning.aot.execute.run_atom`). The step's span is kind ``layer`` with attributes
    ``layer`` (the index) and ``atoms`` (their ids)."""

    name = "execute"

    def __init__(self, tools: AtomTools):
        super().__init__(LAYER_LIMIT)
        self.tools = tools

    def prep(self, shared: dict[str, Any]) -> LayerInput:
        return layer_input(shared["record"], shared["layer"])

    def span_attributes(self, inp: LayerInput) -> dict[str, Any]:
        return {"layer": inp.index, "atoms": [a.id for a in inp.atoms]}

    def items(self, inp: LayerInput) -> list[Atom]:
        return inp.atoms

    def run_item(self, inp: LayerInput, atom: Atom) -> AtomRecord:
        return layer_atom(self.tools, inp, atom)

    async def arun_item(self, inp: LayerInput, atom: Atom) -> AtomRecord:
        return await alayer_atom(self.tools, inp, atom)

    def exec(self, inp: LayerInput) -> tuple[list[AtomRecord], float]:  # type: ignore[override]
        started = time.perf_counter()
        return super().exec(inp), time.perf_counter() - started

    async def exec_async(self, inp: LayerInput) -> tuple[list[AtomRecord], float]:  # type: ignore[override]
        """The layer's atoms at once. Cancelled (a timeout, a client gone), it records the atoms of this layer
        that finished, compensates every completed atom newest first (shielded from a second cancellation),
        marks the record failed (``"cancelled"``) and lets the ``CancelledError`` propagate with the record
        attached as its ``record``, exactly as :func:`~llamabot.reasoning.aot.execute.aexecute_plan` does."""
        started = time.perf_counter()
        run = current_run()
        threads = None if run is None else run.values.get(THREADS)  # the run's own pool (AoTBot.run_values)
        if threads is not None:
            inp.pool = threads.for_layer(self.tools, inp.record, inp.atoms)
        try:
            done = await super().exec_async(inp)
        except asyncio.CancelledError as cancelled:
            await compensate_cancelled(self.tools, inp.record, inp.finished, time.perf_counter() - started)
            cancelled.record = inp.record  # type: ignore[attr-defined]
            raise
        return done, time.perf_counter() - started

    def post(self, shared: dict[str, Any], inp: LayerInput, outcome: tuple[list[AtomRecord], float]) -> str:
        done, duration = outcome
        record: ExecutionRecord = shared["record"]
        ok = apply_layer(record, done, duration)
        logger.debug(
            "layer {}: {}",
            inp.index,
            ", ".join(
                f"{r.id}:{r.name} = {r.result!r}"
                if r.status == "ok"
                else f"{r.id}:{r.name} failed: {r.error}"
                for r in done
            ),
        )
        if not ok:
            return "failed"
        shared["layer"] = next_layer(record, inp.index + 1)
        return "layer" if shared["layer"] < len(record.layers) else "done"


class ReportNode(DualNode):
    """The final atom: what it reports becomes the answer (nothing is called); ends the run, or with
    ``samples > 1`` the sample (then ``"sample"``: the next one, or ``"vote"`` after the last)."""

    name = "report"
    span_kind = "report"
    terminal = True

    def __init__(self, samples: int = 1):
        super().__init__()
        self.samples = samples

    def prep(self, shared: dict[str, Any]) -> None:
        return None

    def exec(self, prep_res: None) -> None:
        return None

    def post(self, shared: dict[str, Any], prep_res: None, exec_res: None) -> str | None:
        record = finish(shared["record"])
        logger.debug("answer {!r}", record.answer)
        return None if self.samples == 1 else sample_finished(shared, self.samples)


class VoteNode(DualNode):
    """Self-consistency: the majority answer of the executed plans (ties to the earliest sample) becomes the
    run's answer, with the plan and record of the first sample that gave it; ends the run. Nothing is called:
    the answers were computed by the atoms, the vote only counts them."""

    name = "vote"
    span_kind = "vote"
    terminal = True

    def prep(self, shared: dict[str, Any]) -> None:
        return None

    def exec(self, prep_res: None) -> None:
        return None

    def post(self, shared: dict[str, Any], prep_res: None, exec_res: None) -> None:
        vote(shared)
        opened = current_span()
        if opened is not None:
            opened.attributes.update(shared["vote"])
        logger.debug(
            "vote: sample {} wins with {} votes", shared["vote"]["winner"] + 1, shared["vote"]["votes"]
        )
        return None


class CompensateNode(DualNode):
    """After a failed layer: undo every completed atom whose tool has a compensator, newest first (one
    ``tool_call`` span of kind ``compensation`` each). Then, while fewer than ``max_execution_replans`` plans
    have failed, re-plan (``"replan"``): the planner sees its plan and the failure (the atom, its inputs, the
    cause). After that, raise :class:`AtomExecutionError` with the record and the earlier failures (or, with
    ``samples > 1``, go on to the next sample). The choice is a count, not the model's, so it is this ``post``,
    not a ``DecideNode`` (which asks the model which tool to call)."""

    name = "compensate"
    span_kind = "compensate"
    terminal = True

    def __init__(self, tools: AtomTools, *, max_execution_replans: int = 0, samples: int = 1):
        super().__init__()
        self.tools = tools
        self.max_execution_replans = max_execution_replans
        self.samples = samples

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

    def post(
        self, shared: dict[str, Any], calls: list[CompensationCall], outcome: tuple[list[str | None], float]
    ) -> str:
        record: ExecutionRecord = shared["record"]
        apply_compensations(record, calls, *outcome)
        for call, error in zip(calls, outcome[0], strict=True):
            logger.debug("compensated atom {} with {}: {}", call.atom, call.compensator, error or "ok")
        failures: list[str] = shared["execution_failures"]
        failure = failure_summary(record)
        if len(failures) < self.max_execution_replans:
            failures.append(failure)
            logger.debug(
                "execution failed, re-planning ({} of {}): {}",
                len(failures),
                self.max_execution_replans,
                failure,
            )
            shared["memory"] += [
                assistant(json.dumps(shared["plan"].to_dict())),
                user(EXECUTION_FAILED_MESSAGE.format(failure=failure)),
            ]
            return "replan"
        error = execution_error(record, tuple(failures))
        action = sample_failed(shared, self.samples, str(error))
        if action is None:
            raise error
        return action

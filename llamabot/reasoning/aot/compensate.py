"""When an AoT execution fails: the compensating calls that undo completed atoms (newest first, one
``tool_call`` span of kind ``compensation`` each), and the failure's record, summary and error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llamabot.agents.agent_state import PendingCall
from llamabot.agents.gated_call import GatedCall, call_context
from llamabot.observe.tracing import Span, span
from llamabot.reasoning.aot.record import (
    AtomExecutionError,
    AtomTools,
    ExecutionRecord,
    _failure_text,
    final_answer,
)
from llamabot.tools.call import ToolOutcome

#: The span kind of a compensating call (category ``tool_call``).
COMPENSATION_SPAN = "compensation"


@dataclass(frozen=True, slots=True)
class CompensationCall:
    """One compensation to run: atom ``atom`` (which called tool ``tool``) is undone by ``compensator`` with
    ``arguments``."""

    atom: int
    tool: str
    compensator: str
    arguments: dict[str, Any]


def compensation_calls(tools: AtomTools, record: ExecutionRecord) -> list[CompensationCall]:
    """The compensations of a failed execution: every completed atom whose tool has a compensator, newest first
    in plan order (layer, then id: the same whatever order the atoms of a layer finished in). The compensator
    receives those of the atom's resolved inputs, and its ``result``, that it declares as parameters."""
    calls = []
    for atom_id in reversed([i for layer in record.layers for i in layer]):
        atom_record = record.atoms[atom_id]
        compensator = tools.compensations.get(atom_record.name)
        if compensator is not None and atom_record.status == "ok" and atom_record.kind != "final":
            available = {**(atom_record.inputs or {}), "result": atom_record.result}
            wanted = compensator.arguments.model_fields
            calls.append(CompensationCall(atom_id, atom_record.name, compensator.name,
                                          {k: v for k, v in available.items() if k in wanted}))
    return calls


def _compensation_span(call: CompensationCall) -> span:
    return span(f"{call.atom}:{call.compensator}", COMPENSATION_SPAN, "tool_call", atom=call.atom,
                arguments=call.arguments)


def _gated(tools: AtomTools, call: CompensationCall) -> GatedCall:
    """The compensating call, through the piece an atom's call goes through (its call context as an atom's, the
    call id ``compensate-<atom id>``; compensators are not gated for approval)."""
    tool = tools.compensations[call.tool]
    pending = PendingCall(f"compensate-{call.atom}", tool.name, call.arguments, "")
    return GatedCall(tool, pending, call_context(pending) if tool.hidden else None)


def _compensated(outcome: ToolOutcome, opened: Span | None) -> str | None:
    if opened is not None:
        if outcome.ok:
            opened.attributes["result"] = outcome.value
        else:
            opened.error = outcome.error
    return outcome.error


def run_compensations(tools: AtomTools, calls: list[CompensationCall]) -> list[str | None]:
    """Call the compensators in order (one ``tool_call`` span each, kind ``compensation``); each one's error or
    ``None``. A failing compensator does not stop the others."""
    errors = []
    for call in calls:
        with _compensation_span(call) as opened:
            errors.append(_compensated(_gated(tools, call).run(), opened))
    return errors


async def arun_compensations(tools: AtomTools, calls: list[CompensationCall]) -> list[str | None]:
    """Async twin of :func:`run_compensations` (still one at a time: the order matters)."""
    errors = []
    for call in calls:
        with _compensation_span(call) as opened:
            errors.append(_compensated(await _gated(tools, call).arun(), opened))
    return errors


def apply_compensations(record: ExecutionRecord, calls: list[CompensationCall], errors: list[str | None],
                        duration_s: float = 0.0) -> None:
    """Record each compensation on its atom (``compensation = "<tool>: ok"`` or ``"<tool>: failed: <error>"``).
    Only an atom whose compensator succeeded becomes ``compensated``; one whose compensator failed stays ``ok``
    (its effect was not undone, and the record must not say it was)."""
    record.duration_s += duration_s
    for call, error in zip(calls, errors, strict=True):
        atom_record = record.atoms[call.atom]
        if error is None:
            atom_record.status = "compensated"
        atom_record.compensation = f"{call.compensator}: " + ("ok" if error is None else f"failed: {error}")


def execution_error(record: ExecutionRecord, earlier: tuple[str, ...] = ()) -> AtomExecutionError:
    """The error a failed execution raises: the failing atom, its inputs, the cause, the (partial) record, and
    the failures of earlier plans (``earlier``)."""
    atom = record.plan.atom(record.failed_atom)  # type: ignore[arg-type]
    atom_record = record.atoms[atom.id]
    return AtomExecutionError(atom, atom_record.inputs, atom_record.error or "failed", record, earlier)


def failure_summary(record: ExecutionRecord) -> str:
    """One line on a failed execution, for the planner and the error of the last plan: the atom, its tool, its
    inputs and the cause (``atom 3 (tool 'divide') failed with inputs {'a': 4, 'b': 0}: division by zero``)."""
    atom = record.plan.atom(record.failed_atom)  # type: ignore[arg-type]
    atom_record = record.atoms[atom.id]
    return _failure_text(atom, atom_record.inputs, atom_record.error or "failed")


def finish(record: ExecutionRecord) -> ExecutionRecord:
    """A successful execution's answer: what the final atom reports (its record gets ``ok`` and the answer)."""
    final = record.plan.final
    if record.status == "ok" and final is not None:
        record.answer = final_answer(final, record.results)
        final_record = record.atoms[final.id]
        final_record.status, final_record.result = "ok", record.answer
    return record

"""What an AoT run returns: :class:`AoTResult` (the answer, the plan that gave it, its execution record, the
re-plans, the samples of a self-consistency run, the tokens spent)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llamabot.graph.mermaid import MermaidDiagram
from llamabot.models.reply import Usage
from llamabot.observe.tracing import Trace
from llamabot.reasoning.aot.plan import Plan
from llamabot.reasoning.aot.record import ExecutionRecord, _jsonable
from llamabot.reasoning.aot.visualization import plan_to_mermaid


@dataclass(slots=True)
class AoTResult:
    """What an AoT run produced: the answer, the (validated) plan, the execution record and the trace.

    ``replans``: re-plans after validation errors; ``execution_failures``: the failures of executed plans that
    led to a re-plan (each names the atom, its inputs and the cause). With ``samples=k > 1``, ``samples`` holds
    one entry per sample (``answer`` or ``error``, ``plan``, ``record``) and ``votes`` the votes of the winning
    answer; ``plan`` and ``record`` are the winning sample's (the first sample that gave the majority answer)."""

    answer: Any
    plan: Plan
    record: ExecutionRecord
    trace: Trace
    replans: int = 0
    plan_errors: list[list[str]] = field(default_factory=list)  # the errors of each rejected plan
    notes: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    parse_failures: int = (
        0  # replies that were not a parseable plan (zero under the embedded model's grammar)
    )
    execution_failures: list[str] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    votes: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.record.to_dict()["answer"],
            "plan": self.plan.to_dict(),
            "record": self.record.to_dict(),
            "replans": self.replans,
            "parse_failures": self.parse_failures,
            "plan_errors": self.plan_errors,
            "execution_failures": self.execution_failures,
            "samples": [_sample_dict(s) for s in self.samples],
            "votes": self.votes,
            "notes": self.notes,
            "trace_id": self.trace.trace_id,
        }

    def to_mermaid(self) -> MermaidDiagram:
        return MermaidDiagram(plan_to_mermaid(self.plan, self.record))


def _sample_dict(sample: dict[str, Any]) -> dict[str, Any]:
    plan = sample.get("plan")
    return {
        "answer": _jsonable(sample.get("answer")),
        "error": sample.get("error"),
        "plan": plan.to_dict() if plan is not None else None,
    }


def run_usage(trace: Trace) -> Usage:
    """The tokens of every model call of the run (every plan of every sample)."""
    usage = Usage()
    for s in trace.of_kind("model_call"):
        if "reply" in s.attributes:
            usage = usage + s.attributes["reply"].usage
    return usage

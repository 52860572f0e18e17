"""Per-phase timings, model calls and tokens, read off a run's trace. Pure.

Every phase runs inside a span of kind ``phase`` named ``P1``, ``P2``, ``P3`` (``P3`` once per layer) or ``CoT``;
every model call inside it is a ``model_call`` span carrying the reply's usage. :func:`phase_stats` adds them
up per phase name, for the phase spans below one root span (so runs sharing a trace are kept apart).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from llamabot.observe.tracing import Span, Trace

PHASE_KIND = "phase"


@dataclass
class PhaseStats:
    """What one phase cost: wall seconds, model calls, prompt and completion tokens."""

    seconds: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: PhaseStats) -> PhaseStats:
        return PhaseStats(
            self.seconds + other.seconds,
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 4)}


def _below(span: Span, root_id: int, spans: list[Span]) -> bool:
    parent = span.parent_id
    while parent is not None:
        if parent == root_id:
            return True
        parent = spans[parent].parent_id
    return False


def _phase_of(span: Span, spans: list[Span]) -> Span | None:
    parent = span.parent_id
    while parent is not None:
        candidate = spans[parent]
        if candidate.kind == PHASE_KIND:
            return candidate
        parent = candidate.parent_id
    return None


def phase_stats(trace: Trace, root: Span | None) -> dict[str, PhaseStats]:
    """Phase name -> :class:`PhaseStats` for the phases below ``root`` (all phases when ``root`` is None)."""
    spans = trace.spans
    stats: dict[str, PhaseStats] = {}
    for span in spans:
        if span.kind == PHASE_KIND and (root is None or _below(span, root.span_id, spans)):
            entry = stats.setdefault(span.name, PhaseStats())
            entry.seconds += span.duration_s or 0.0
    for span in spans:
        if span.kind != "model_call":
            continue
        phase = _phase_of(span, spans)
        if phase is None or phase.name not in stats or (root is not None and not _below(phase, root.span_id, spans)):
            continue
        entry = stats[phase.name]
        entry.calls += 1
        reply = span.attributes.get("reply")
        if reply is not None:
            entry.prompt_tokens += reply.usage.prompt_tokens
            entry.completion_tokens += reply.usage.completion_tokens
    return stats


def total(stats: dict[str, PhaseStats]) -> PhaseStats:
    result = PhaseStats()
    for entry in stats.values():
        result = result.add(entry)
    return result


def model_calls_in(trace: Trace, phase: Span) -> list[Span]:
    """The ``model_call`` spans inside ``phase`` (for full-prompt debug output)."""
    return [s for s in trace.spans if s.kind == "model_call" and _below(s, phase.span_id, trace.spans)]

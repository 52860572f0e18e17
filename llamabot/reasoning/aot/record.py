"""The record of an AoT execution: what each atom did (:class:`AtomRecord`), the whole execution
(:class:`ExecutionRecord`, plain data that round-trips through the state codec), the retry policy of atoms and
the error a failed atom raises (:class:`AtomExecutionError`), and what an execution calls (:class:`AtomTools`,
configuration, never state). Pure data; :mod:`execute` fills it."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from llamabot.errors import LlamabotError
from llamabot.reasoning.aot.plan import Atom, Plan, json_text, resolve
from llamabot.tools.retry import Retry
from llamabot.tools.tool import Tool

AtomStatus = Literal["ok", "failed", "compensated", "not_run"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often a failing atom is tried again (``retries`` extra attempts, ``backoff_s`` apart).
    An atom's own ``retries`` field overrides ``retries``. With neither (the default policy and no ``retries``
    on the atom), the tool's own policy applies (``@tool(retries=...)``), else one attempt."""

    retries: int = 0
    backoff_s: float = 0.0

    def for_atom(self, atom: Atom) -> Retry | None:
        """The tool-call retry policy of ``atom`` (``None``: the tool's own)."""
        if atom.retries is None and self.retries == 0:
            return None
        retries = atom.retries if atom.retries is not None else self.retries
        return Retry(attempts=1 + retries, backoff_s=self.backoff_s, multiplier=1.0, jitter_s=0.0)


@dataclass(slots=True)
class AtomRecord:
    """What happened to one atom."""

    id: int
    kind: str
    name: str
    status: AtomStatus = "not_run"
    inputs: Any = None
    result: Any = None
    error: str | None = None
    attempts: int = 0
    started: float = 0.0  # time.perf_counter() when the atom started
    duration_s: float = 0.0
    compensation: str | None = None  # outcome of the compensating tool, when one ran


@dataclass(slots=True)
class ExecutionRecord:
    """The execution of a plan: per-atom records, the layers, the answer or the error."""

    plan: Plan
    layers: list[list[int]]
    atoms: dict[int, AtomRecord]
    status: Literal["ok", "failed"] = "ok"
    answer: Any = None
    error: str | None = None
    failed_atom: int | None = None
    duration_s: float = 0.0

    @property
    def results(self) -> dict[int, Any]:
        return {i: r.result for i, r in self.atoms.items() if r.status in ("ok", "compensated")}

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "layers": self.layers,
            "atoms": [_jsonable_record(r) for r in self.atoms.values()],
            "status": self.status,
            "answer": _jsonable(self.answer),
            "error": self.error,
            "failed_atom": self.failed_atom,
            "duration_s": self.duration_s,
        }

    def to_json(self, path: str | Path | None = None) -> str:
        return json_text(self.to_dict(), path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExecutionRecord:
        atoms = {a["id"]: AtomRecord(**a) for a in data["atoms"]}
        return cls(
            Plan.load(data["plan"]), data["layers"], atoms, data["status"], data.get("answer"), data.get("error"),
            data.get("failed_atom"), data.get("duration_s", 0.0),
        )


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def _jsonable_record(record: AtomRecord) -> dict[str, Any]:
    return {
        "id": record.id, "kind": record.kind, "name": record.name, "status": record.status,
        "inputs": _jsonable(record.inputs), "result": _jsonable(record.result), "error": record.error,
        "attempts": record.attempts, "started": record.started, "duration_s": record.duration_s,
        "compensation": record.compensation,
    }


def _failure_text(atom: Atom, inputs: Any, cause: str) -> str:
    return f"atom {atom.id} ({atom.kind} {atom.name!r}) failed with inputs {inputs!r}: {cause}"


class AtomExecutionError(LlamabotError, RuntimeError):
    """An atom failed. ``record`` holds everything computed before (and the compensations run). ``earlier``:
    the failures of the plans tried before this one (the bot re-plans after a failure, see ``AoTBot``)."""

    def __init__(self, atom: Atom, inputs: Any, cause: str, record: ExecutionRecord, earlier: tuple[str, ...] = ()):
        self.atom, self.inputs, self.cause, self.record = atom, inputs, cause, record
        self.earlier = tuple(earlier)
        message = _failure_text(atom, inputs, cause)
        if self.earlier:
            message += f" (plan {len(self.earlier) + 1}; the earlier plans failed too: {'; '.join(self.earlier)})"
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class AtomTools:
    """What an execution calls (configuration, live: never part of the state): the tools of ``kind: tool`` and
    ``kind: decision`` atoms, the retry policy, and the compensating tools by the name of the tool they undo."""

    tools: dict[str, Tool]
    decisions: dict[str, Tool] = field(default_factory=dict)
    retry: RetryPolicy = RetryPolicy()
    compensations: dict[str, Tool] = field(default_factory=dict)

    def tool_for(self, atom: Atom) -> Tool:
        return (self.tools if atom.kind == "tool" else self.decisions)[atom.name]

    def non_blocking(self) -> AtomTools:
        """The same tools, their sync functions called on the event loop (for tools known not to block)."""
        return AtomTools(_non_blocking(self.tools), _non_blocking(self.decisions), self.retry,
                         _non_blocking(self.compensations))


def _non_blocking(tools: dict[str, Tool]) -> dict[str, Tool]:
    return {name: dataclasses.replace(t, blocking=False) for name, t in tools.items()}


def final_answer(atom: Atom, results: dict[int, Any]) -> Any:
    """What the final atom reports: its resolved input (one value when it has one key), else its
    dependencies' results (one value, or ``{id: result}`` for several: never just the first)."""
    if atom.input:
        resolved = resolve(atom.input, results)
        return next(iter(resolved.values())) if len(resolved) == 1 else resolved
    if len(atom.depends_on) == 1:
        return results[atom.depends_on[0]]
    return {dep: results[dep] for dep in atom.depends_on}

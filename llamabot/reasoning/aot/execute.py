"""Plan execution: deterministic, usable without any LLM.

Atoms run in topological layers (ordered by id within a layer); in the async path the atoms of a layer run
concurrently. References resolve from the results so far. Every atom's inputs, result, attempts and duration
are recorded. On failure execution stops at the failing atom with :class:`AtomExecutionError` (naming the atom,
the tool, the resolved inputs and the cause); completed atoms whose tool declares a compensating tool are
compensated in reverse order; nothing computed is lost: the partial record is on the error.

Sync and async share :class:`_Run` (layers, resolution, recording, compensation) and one exchange per atom
(:func:`_atom`), which calls its tool through the one tool-call logic (:func:`llamabot.tools.call.tool_call`:
validation, the retry policy, timeouts); only the driver differs (``run_exchange`` / ``arun_exchange``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from llamabot.errors import DependencyCycleError, LlamabotError, ToolArgumentsError
from llamabot.graph.layers import topological_layers
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.reasoning.aot.plan import Atom, Plan, resolve
from llamabot.tools.call import ToolOutcome, tool_call
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
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            Path(path).write_text(text)
        return text

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


class AtomExecutionError(LlamabotError, RuntimeError):
    """An atom failed. ``record`` holds everything computed before (and the compensations run)."""

    def __init__(self, atom: Atom, inputs: Any, cause: str, record: ExecutionRecord):
        self.atom, self.inputs, self.cause, self.record = atom, inputs, cause, record
        super().__init__(f"atom {atom.id} ({atom.kind} {atom.name!r}) failed with inputs {inputs!r}: {cause}")


def execution_layers(plan: Plan) -> list[list[Atom]]:
    """Topological layers of a (validated) plan: each atom comes after every atom it depends on; by id within a
    layer. Raises ``ValueError`` for a cycle or a dependency on a missing atom (validate the plan first)."""
    atoms = {a.id: a for a in sorted(plan.atoms, key=lambda a: a.id)}
    for atom in atoms.values():
        missing = [d for d in atom.depends_on if d not in atoms]
        if missing:
            raise ValueError(f"atom {atom.id} depends on missing atoms {missing}; validate the plan first")
    try:
        layers = topological_layers({i: a.depends_on for i, a in atoms.items()})
    except DependencyCycleError as exc:
        raise ValueError(
            f"the plan has a dependency cycle among atoms {sorted(exc.blocked)}; validate it first"
        ) from exc
    return [[atoms[i] for i in layer] for layer in layers]


def final_answer(atom: Atom, results: dict[int, Any]) -> Any:
    """What the final atom reports: its resolved input (one value when it has one key), else its
    dependencies' results (one value, or ``{id: result}`` for several: never just the first)."""
    if atom.input:
        resolved = resolve(atom.input, results)
        return next(iter(resolved.values())) if len(resolved) == 1 else resolved
    if len(atom.depends_on) == 1:
        return results[atom.depends_on[0]]
    return {dep: results[dep] for dep in atom.depends_on}


@dataclass
class _Run:
    """The state of one execution, shared by the sync and async drivers."""

    plan: Plan
    tools: dict[str, Tool]
    decisions: dict[str, Tool]
    retry: RetryPolicy
    compensations: dict[str, Tool]
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self.layer_atoms = execution_layers(self.plan)
        self.record = ExecutionRecord(
            self.plan, [[a.id for a in layer] for layer in self.layer_atoms],
            {a.id: AtomRecord(a.id, a.kind, a.name) for a in self.plan.atoms},
        )
        self.completed: list[int] = []

    def tool_for(self, atom: Atom) -> Tool:
        return (self.tools if atom.kind == "tool" else self.decisions)[atom.name]

    def succeed(self, atom: Atom, inputs: Any, value: Any, attempts: int, started: float) -> None:
        record = self.record.atoms[atom.id]
        record.status, record.inputs, record.result, record.attempts = "ok", inputs, value, attempts
        record.started, record.duration_s = started, time.perf_counter() - started
        self.completed.append(atom.id)

    def fail(self, atom: Atom, inputs: Any, cause: str, attempts: int, started: float) -> None:
        record = self.record.atoms[atom.id]
        record.status, record.inputs, record.error, record.attempts = "failed", inputs, cause, attempts
        record.started, record.duration_s = started, time.perf_counter() - started
        if self.record.failed_atom is None or atom.id < self.record.failed_atom:  # deterministic under gather
            self.record.failed_atom = atom.id
            self.record.status, self.record.error = "failed", f"atom {atom.id} ({atom.name}): {cause}"

    def compensation_calls(self) -> list[tuple[AtomRecord, Tool, dict[str, Any]]]:
        """Completed atoms with a compensating tool, newest first, with that tool's arguments: it receives
        the atom's inputs and its ``result`` (for the parameters it declares)."""
        calls = []
        order = {atom.id: i for i, atom in enumerate(a for layer in self.layer_atoms for a in layer)}
        for atom_id in sorted(self.completed, key=order.__getitem__, reverse=True):  # deterministic under gather
            record = self.record.atoms[atom_id]
            compensator = self.compensations.get(record.name)
            if compensator is not None:
                available = {**(record.inputs or {}), "result": record.result}
                wanted = compensator.arguments.model_fields
                calls.append((record, compensator, {k: v for k, v in available.items() if k in wanted}))
        return calls

    def compensated(self, record: AtomRecord, compensator: Tool, error: str | None) -> None:
        record.status = "compensated"
        record.compensation = f"{compensator.name}: " + ("ok" if error is None else f"failed: {error}")

    def finish(self) -> ExecutionRecord:
        self.record.duration_s = time.perf_counter() - self.started
        if self.record.status == "ok":
            final = self.plan.final
            if final is not None:
                self.record.answer = final_answer(final, self.record.results)
                self.record.atoms[final.id].status = "ok"
                self.record.atoms[final.id].result = self.record.answer
        return self.record

    def error(self) -> AtomExecutionError:
        atom = self.plan.atom(self.record.failed_atom)  # type: ignore[arg-type]
        record = self.record.atoms[atom.id]
        return AtomExecutionError(atom, record.inputs, record.error or "failed", self.record)


def execute_plan(
    plan: Plan,
    tools: dict[str, Tool],
    decisions: dict[str, Tool] | None = None,
    *,
    retry: RetryPolicy = RetryPolicy(),
    compensations: dict[str, Tool] | None = None,
) -> ExecutionRecord:
    """Run a validated plan synchronously, layer by layer. Raises :class:`AtomExecutionError` on failure."""
    run = _Run(plan, tools, decisions or {}, retry, compensations or {})
    for layer in run.layer_atoms:
        for atom in layer:
            if atom.kind == "final":
                continue
            if not run_exchange(_atom(run, atom)):
                for record, compensator, kwargs in run.compensation_calls():
                    run.compensated(record, compensator, run_exchange(tool_call(compensator, kwargs)).error)
                run.finish()
                raise run.error()
    return run.finish()


def _atom(run: _Run, atom: Atom, executor: Executor | None = None) -> Exchange[bool]:
    """One atom, for both drivers: resolve its references, call its tool (validation, retries, timeout: the
    tool-call logic), record the outcome. True when the atom succeeded."""
    started = time.perf_counter()
    try:
        inputs = resolve(atom.input, run.record.results)
    except KeyError as exc:
        run.fail(atom, atom.input, f"input refers to atom {exc.args[0]}, which has no result", 0, started)
        return False
    call = tool_call(run.tool_for(atom), inputs, retry=run.retry.for_atom(atom), executor=executor)
    outcome = yield from call
    if outcome.ok:
        run.succeed(atom, inputs, outcome.value, outcome.attempts, started)
        return True
    run.fail(atom, inputs, _cause(outcome), outcome.attempts, started)
    return False


def _cause(outcome: ToolOutcome) -> str:
    """Why the atom failed: the argument problems (the plan's inputs were wrong), else the tool's error."""
    if isinstance(outcome.exception, ToolArgumentsError):
        return "; ".join(outcome.exception.errors)
    return outcome.error or "failed"


async def aexecute_plan(
    plan: Plan,
    tools: dict[str, Tool],
    decisions: dict[str, Tool] | None = None,
    *,
    retry: RetryPolicy = RetryPolicy(),
    compensations: dict[str, Tool] | None = None,
    sync_tools_in_threads: bool = True,
) -> ExecutionRecord:
    """Async twin of :func:`execute_plan`: the atoms of a layer run concurrently. Sync tools run in worker
    threads so that blocking tools overlap too; ``sync_tools_in_threads=False`` calls them on the event loop
    (for tools known not to block)."""
    if not sync_tools_in_threads:
        tools, decisions, compensations = (
            _non_blocking(t) for t in (tools, decisions or {}, compensations or {})
        )
    run = _Run(plan, tools, decisions or {}, retry, compensations or {})
    width = max((len(layer) for layer in run.layer_atoms), default=1)
    # A pool as wide as the widest layer, so that a layer of blocking tools overlaps completely (the
    # default executor has only cores + 4 threads).
    pool = ThreadPoolExecutor(max_workers=min(32, width), thread_name_prefix="aot") if sync_tools_in_threads else None
    try:
        for layer in run.layer_atoms:
            atoms = [a for a in layer if a.kind != "final"]
            outcomes = await asyncio.gather(*(arun_exchange(_atom(run, a, pool)) for a in atoms))
            if not all(outcomes):
                for record, compensator, kwargs in run.compensation_calls():
                    outcome = await arun_exchange(tool_call(compensator, kwargs))
                    run.compensated(record, compensator, outcome.error)
                run.finish()
                raise run.error()
    finally:
        if pool is not None:
            pool.shutdown(wait=False)
    return run.finish()


def _non_blocking(tools: dict[str, Tool]) -> dict[str, Tool]:
    return {name: dataclasses.replace(t, blocking=False) for name, t in tools.items()}

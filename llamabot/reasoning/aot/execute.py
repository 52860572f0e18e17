"""Plan execution: deterministic, usable without any LLM.

Atoms run in topological layers (ordered by id within a layer); the atoms of a layer run concurrently (worker
threads on the sync path, tasks on the async path: :mod:`llamabot.agents.layer`). References resolve from the
results of earlier layers. Every atom's inputs, result, attempts and duration are recorded. On failure execution
stops after the failing atom's layer with :class:`AtomExecutionError` (naming the atom, the tool, the resolved
inputs and the cause); completed atoms whose tool declares a compensating tool are compensated in reverse plan
order; nothing computed is lost: the partial record is on the error.

One implementation, in steps that the graph (``graph.py``: ``LayerNode``, ``CompensateNode``, ``ReportNode``)
and :func:`execute_plan` / :func:`aexecute_plan` share:

- :func:`run_atom` / :func:`arun_atom`: one atom, through the piece ``FuncNode`` runs a tool with
  (:class:`llamabot.agents.gated_call.GatedCall`: the approval gate, then the one tool-call logic: validation,
  the retry policy, timeouts; sync tools in worker threads on the async path), inside a
  ``tool_call`` span of kind ``atom`` (arguments: the resolved inputs) that the run's hooks see as it happens.
- :func:`run_layer` / :func:`arun_layer`: the atoms of one layer (a :class:`LayerInput`), all of them at once
  either way (the one layer logic, :mod:`llamabot.agents.layer`); they return new atom records and change nothing.
- :func:`apply_layer`, :func:`compensation_calls`, :func:`run_compensations` / :func:`arun_compensations`,
  :func:`apply_compensations`, :func:`finish`, :func:`execution_error`: the rest, on an :class:`ExecutionRecord`.

The execution's state is the :class:`ExecutionRecord` (data only: it round-trips through the state codec) and
the index of the next layer; the tools (:class:`AtomTools`) are configuration, never state.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from llamabot.agents.agent_state import PendingCall
from llamabot.agents.approval import approval_gate
from llamabot.agents.gated_call import GatedCall, call_context
from llamabot.agents.layer import arun_items, run_items
from llamabot.errors import DependencyCycleError, ToolArgumentsError
from llamabot.graph.layers import topological_layers
from llamabot.observe.tracing import Span, span
from llamabot.reasoning.aot.compensate import (
    apply_compensations,
    arun_compensations,
    compensation_calls,
    execution_error,
    finish,
    run_compensations,
)
from llamabot.reasoning.aot.plan import Atom, Plan, references, resolve
from llamabot.reasoning.aot.record import (
    AtomRecord,
    AtomTools,
    ExecutionRecord,
    RetryPolicy,
)
from llamabot.reasoning.aot.schema import MAX_ATOMS
from llamabot.tools.approval import ApprovalMissingError
from llamabot.tools.call import ToolOutcome
from llamabot.tools.tool import Tool


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


#: The span kind of an atom's tool call (category ``tool_call``; a compensating call's: ``compensate.COMPENSATION_SPAN``).
ATOM_SPAN = "atom"


def new_record(plan: Plan) -> ExecutionRecord:
    """The record of an execution that has not started: the layers, every atom ``not_run``."""
    layers = execution_layers(plan)
    return ExecutionRecord(plan, [[a.id for a in layer] for layer in layers],
                           {a.id: AtomRecord(a.id, a.kind, a.name) for a in plan.atoms})


def layer_atoms(record: ExecutionRecord, index: int) -> list[Atom]:
    """The atoms layer ``index`` runs: all but the final (which is not called; :func:`finish` reports it)."""
    if index >= len(record.layers):
        return []
    atoms = _atoms_by_id(record.plan)
    return [atoms[i] for i in record.layers[index] if record.atoms[i].kind != "final"]


def next_layer(record: ExecutionRecord, index: int) -> int:
    """The first layer from ``index`` on that has an atom to run (``len(record.layers)`` when none is left)."""
    layers, atoms = record.layers, record.atoms
    while index < len(layers) and all(atoms[i].kind == "final" for i in layers[index]):
        index += 1
    return index


def layer_results(record: ExecutionRecord, atoms: list[Atom]) -> dict[int, Any]:
    """The results ``atoms`` refer to (of ``ok`` and ``compensated`` atoms): what their inputs resolve from."""
    results = {}
    for atom in atoms:
        for ref in references(atom.input):
            found = record.atoms.get(ref)
            if found is not None and found.status in ("ok", "compensated"):
                results[ref] = found.result
    return results


_INDEXES: dict[int, tuple[weakref.ref[Plan], dict[int, Atom]]] = {}


def _atoms_by_id(plan: Plan) -> dict[int, Atom]:
    """``{id: atom}`` of a plan, made once per plan object (plans are not changed once validated), so that a
    visit per layer costs the layer's size, not the plan's."""
    key = id(plan)
    found = _INDEXES.get(key)
    if found is not None and found[0]() is plan:
        return found[1]
    index = {a.id: a for a in plan.atoms}
    _INDEXES[key] = (weakref.ref(plan, lambda _, key=key: _INDEXES.pop(key, None)), index)
    return index


# -- one atom -------------------------------------------------------------------------------------------------


def _prepared(tools: AtomTools, atom: Atom, results: dict[int, Any],
              executor: Executor | None) -> tuple[Any, GatedCall | None, str | None]:
    """The atom's resolved inputs and its call (the one call of a tool in a run, as ``FuncNode`` makes it: its
    tool, the atom's retry policy, and for a tool that requires approval the run's approver: AoT runs do not
    pause, so no decisions are given; a durable run's steps wait for a person themselves; its call context as
    ``FuncNode``'s (``call_context``): the tool's ``RunContext`` has the run's deps, the call id ``atom-<id>`` and,
    once approved, the decision); or its inputs and why it does not run (a reference without a result, no
    approver: the tool never runs)."""
    try:
        inputs = resolve(atom.input, results)
    except KeyError as exc:
        return atom.input, None, f"input refers to atom {exc.args[0]}, which has no result"
    tool = tools.tool_for(atom)
    call = PendingCall(f"atom-{atom.id}", tool.name, inputs, "")
    try:
        gate = approval_gate({}, call) if tool.requires_approval else None
    except ApprovalMissingError as missing:
        return inputs, None, f"{type(missing).__name__}: {missing}"
    context = call_context(call) if tool.hidden else None
    return inputs, GatedCall(tool, call, context, gate, retry=tools.retry.for_atom(atom), executor=executor), None


def _atom_span(atom: Atom, inputs: Any) -> span:
    return span(f"{atom.id}:{atom.name}", ATOM_SPAN, "tool_call", atom=atom.id, atom_kind=atom.kind, arguments=inputs)


def _recorded(atom: Atom, inputs: Any, outcome: ToolOutcome | None, cause: str | None, started: float,
              opened: Span | None) -> AtomRecord:
    """The atom's record from its outcome; the span gets the result (or the error), attempts and status."""
    record = AtomRecord(atom.id, atom.kind, atom.name, inputs=inputs, started=started)
    if outcome is not None:
        record.attempts = outcome.attempts
        if outcome.ok:
            record.status, record.result = "ok", outcome.value
        else:
            cause = _cause(outcome)
    if cause is not None:
        record.status, record.error = "failed", cause
    record.duration_s = time.perf_counter() - started
    if opened is not None:
        attributes = opened.attributes
        attributes["attempts"], attributes["status"] = record.attempts, record.status
        if record.status == "ok":
            attributes["result"] = record.result
        else:
            opened.error = cause
    return record


def run_atom(tools: AtomTools, atom: Atom, results: dict[int, Any]) -> AtomRecord:
    """Run one atom synchronously (see the module docstring); its new record (its inputs: what the tool was
    called with, an approver's edits included). Never raises for a tool's error."""
    started = time.perf_counter()
    inputs, call, cause = _prepared(tools, atom, results, None)
    with _atom_span(atom, inputs) as opened:
        if call is None:
            return _recorded(atom, inputs, None, cause, started, opened)
        outcome = call.run()
        return _recorded(atom, call.arguments, outcome, None, started, opened)


async def arun_atom(tools: AtomTools, atom: Atom, results: dict[int, Any],
                    executor: Executor | None = None) -> AtomRecord:
    """Async twin of :func:`run_atom`: async tools are awaited, sync tools run in ``executor`` (default: the
    shared tool threads) unless they are marked non-blocking."""
    started = time.perf_counter()
    inputs, call, cause = _prepared(tools, atom, results, executor)
    with _atom_span(atom, inputs) as opened:
        if call is None:
            return _recorded(atom, inputs, None, cause, started, opened)
        outcome = await call.arun()
        return _recorded(atom, call.arguments, outcome, None, started, opened)


def _cause(outcome: ToolOutcome) -> str:
    """Why the atom failed: the argument problems (the plan's inputs were wrong), else the tool's error."""
    if isinstance(outcome.exception, ToolArgumentsError):
        return "; ".join(outcome.exception.errors)
    return outcome.error or "failed"


# -- one layer ------------------------------------------------------------------------------------------------


#: At most this many atoms of a layer run at once: a plan's widest layer (:data:`~.schema.MAX_ATOMS`), all of it.
LAYER_LIMIT = MAX_ATOMS


@dataclass(slots=True)
class LayerInput:
    """One visit of a layer: its index, the record, the atoms it runs and the results their inputs resolve from.
    On the async side ``finished`` receives each atom's record as soon as it finishes (so a caller cancelled
    mid-layer still knows which atoms completed and must be compensated) and ``pool`` runs blocking sync tools."""

    index: int
    record: ExecutionRecord
    atoms: list[Atom]
    results: dict[int, Any]
    finished: list[AtomRecord] = field(default_factory=list)
    pool: Executor | None = None


def layer_input(record: ExecutionRecord, index: int) -> LayerInput:
    """The visit of layer ``index``: its atoms and the results their inputs resolve from."""
    atoms = layer_atoms(record, index)
    return LayerInput(index, record, atoms, layer_results(record, atoms))


def layer_atom(tools: AtomTools, inp: LayerInput, atom: Atom) -> AtomRecord:
    """One atom of a layer, sync (:func:`run_atom`)."""
    return run_atom(tools, atom, inp.results)


async def alayer_atom(tools: AtomTools, inp: LayerInput, atom: Atom) -> AtomRecord:
    """One atom of a layer, async (:func:`arun_atom`), its record kept in ``inp.finished`` as soon as it is done."""
    done = await arun_atom(tools, atom, inp.results, inp.pool)
    inp.finished.append(done)
    return done


def run_layer(tools: AtomTools, inp: LayerInput) -> list[AtomRecord]:
    """The atoms of a layer on worker threads, every one of them, as :func:`arun_layer` runs them (one layer
    logic: :func:`llamabot.agents.layer.run_items`). Their new records in id order; the record is not changed
    (:func:`apply_layer` does that)."""
    return run_items(inp.atoms, partial(layer_atom, tools, inp), LAYER_LIMIT)


async def arun_layer(tools: AtomTools, inp: LayerInput) -> list[AtomRecord]:
    """Async twin of :func:`run_layer` (tasks under ``asyncio.gather``; each atom's span a child of the active
    span, in its own task)."""
    return await arun_items(inp.atoms, partial(alayer_atom, tools, inp), LAYER_LIMIT)


class LayerThreads:
    """The worker threads of one execution (a live value of the run, never state): a pool made when a layer
    first has two or more atoms calling blocking sync tools, as wide as the plan's widest layer (at most 32),
    kept for the following layers, shut down by :meth:`close`. Other runs' tool calls cannot crowd it (the
    shared tool threads may be busy), and the loop's default executor (cores + 4 threads) is not used."""

    __slots__ = ("pool",)

    def __init__(self) -> None:
        self.pool: ThreadPoolExecutor | None = None

    def for_layer(self, tools: AtomTools, record: ExecutionRecord, atoms: list[Atom]) -> Executor | None:
        blocking = 0
        for atom in atoms:
            tool = tools.tool_for(atom)
            blocking += not tool.is_async and tool.blocking and tool.timeout is None  # a timeout: own thread
        if blocking < 2:
            return None
        if self.pool is None:
            width = max(len(layer) for layer in record.layers)
            self.pool = ThreadPoolExecutor(max_workers=min(32, width), thread_name_prefix="aot")
        return self.pool

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False)
            self.pool = None


def apply_layer(record: ExecutionRecord, done: list[AtomRecord], duration_s: float = 0.0) -> bool:
    """Write a layer's atom records into ``record``; on failure mark it failed at the lowest failing id (the
    same whatever order the atoms finished in). True when every atom succeeded."""
    record.duration_s += duration_s
    failed = None
    for atom_record in done:
        record.atoms[atom_record.id] = atom_record
        if atom_record.status == "failed" and (failed is None or atom_record.id < failed.id):
            failed = atom_record
    if failed is None:
        return True
    if record.failed_atom is None or failed.id < record.failed_atom:
        record.status, record.failed_atom = "failed", failed.id
        record.error = f"atom {failed.id} ({failed.name}): {failed.error}"
    return False


# -- whole plans (replay, tests): the same steps, walked by a loop instead of graph edges ----------------------


def execute_plan(
    plan: Plan,
    tools: dict[str, Tool],
    decisions: dict[str, Tool] | None = None,
    *,
    retry: RetryPolicy = RetryPolicy(),
    compensations: dict[str, Tool] | None = None,
) -> ExecutionRecord:
    """Run a validated plan synchronously, layer by layer. Raises :class:`AtomExecutionError` on failure."""
    config = AtomTools(tools, decisions or {}, retry, compensations or {})
    record = new_record(plan)
    index = next_layer(record, 0)
    while index < len(record.layers):
        started = time.perf_counter()
        if not apply_layer(record, run_layer(config, layer_input(record, index)), time.perf_counter() - started):
            started = time.perf_counter()
            calls = compensation_calls(config, record)
            apply_compensations(record, calls, run_compensations(config, calls), time.perf_counter() - started)
            raise execution_error(record)
        index = next_layer(record, index + 1)
    return finish(record)


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
    (for tools known not to block).

    Cancelled (a timeout, a client gone), it compensates every atom that completed, including those of the
    interrupted layer, then lets the ``CancelledError`` propagate (so timeouts and task groups work as usual)
    with the execution record attached as its ``record`` attribute (status ``failed``, error ``"cancelled"``)."""
    config = AtomTools(tools, decisions or {}, retry, compensations or {})
    if not sync_tools_in_threads:
        config = config.non_blocking()
    record = new_record(plan)
    index = next_layer(record, 0)
    threads = LayerThreads() if sync_tools_in_threads else None
    try:
        while index < len(record.layers):
            started = time.perf_counter()
            inp = layer_input(record, index)
            if threads is not None:
                inp.pool = threads.for_layer(config, record, inp.atoms)
            try:
                done = await arun_layer(config, inp)
            except asyncio.CancelledError as cancelled:
                await compensate_cancelled(config, record, inp.finished, time.perf_counter() - started)
                cancelled.record = record  # type: ignore[attr-defined]
                raise
            if not apply_layer(record, done, time.perf_counter() - started):
                started = time.perf_counter()
                calls = compensation_calls(config, record)
                errors = await arun_compensations(config, calls)
                apply_compensations(record, calls, errors, time.perf_counter() - started)
                raise execution_error(record)
            index = next_layer(record, index + 1)
    finally:
        if threads is not None:
            threads.close()
    return finish(record)


#: ``ExecutionRecord.error`` of an execution that was cancelled.
CANCELLED = "cancelled"


async def compensate_cancelled(config: AtomTools, record: ExecutionRecord, finished: list[AtomRecord],
                               duration_s: float) -> None:
    """After a cancellation: record the atoms of the interrupted layer that finished, mark the execution failed
    (``error = "cancelled"``), and compensate every completed atom, newest first. The compensations run shielded
    from a second cancellation, so a cancelled execution never leaves completed effects silently in place."""
    apply_layer(record, finished, duration_s)
    record.status, record.error = "failed", CANCELLED
    calls = compensation_calls(config, record)
    if not calls:
        return
    started = time.perf_counter()
    errors = await asyncio.shield(arun_compensations(config, calls))
    apply_compensations(record, calls, errors, time.perf_counter() - started)

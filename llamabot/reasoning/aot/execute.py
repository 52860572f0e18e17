"""Plan execution: deterministic, usable without any LLM.

Atoms run in topological layers (ordered by id within a layer); in the async path the atoms of a layer run
concurrently. References resolve from the results of earlier layers. Every atom's inputs, result, attempts and
duration are recorded. On failure execution stops at the failing atom with :class:`AtomExecutionError` (naming
the atom, the tool, the resolved inputs and the cause); completed atoms whose tool declares a compensating tool
are compensated in reverse plan order; nothing computed is lost: the partial record is on the error.

One implementation, in steps that the graph (``graph.py``: ``LayerNode``, ``CompensateNode``, ``ReportNode``)
and :func:`execute_plan` / :func:`aexecute_plan` share:

- :func:`run_atom` / :func:`arun_atom`: one atom, as ``FuncNode`` runs a tool: its tool is called through the one
  tool-call logic (:func:`llamabot.tools.call.tool_call`: validation, the retry policy, timeouts; sync tools in
  worker threads on the async path) driven by ``run_exchange`` / ``arun_exchange``, inside a ``tool_call`` span
  of kind ``atom`` (arguments: the resolved inputs) that the run's hooks see start and end as it happens.
- :func:`run_layer` / :func:`arun_layer`: the atoms of one layer, all of them either way (in id order / all
  at once under ``asyncio.gather``); they return new atom records and change nothing.
- :func:`apply_layer`, :func:`compensation_calls`, :func:`run_compensations` / :func:`arun_compensations`,
  :func:`apply_compensations`, :func:`finish`, :func:`execution_error`: the rest, on an :class:`ExecutionRecord`.

The execution's state is the :class:`ExecutionRecord` (data only: it round-trips through the state codec) and
the index of the next layer; the tools (:class:`AtomTools`) are configuration, never state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import weakref
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from llamabot.agents.agent_state import PendingCall
from llamabot.agents.approval import Gate, adecide_call, approval_gate, decide_call
from llamabot.errors import DependencyCycleError, LlamabotError, ToolArgumentsError
from llamabot.graph.layers import topological_layers
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.observe.tracing import Span, span
from llamabot.reasoning.aot.plan import Atom, Plan, json_text, references, resolve
from llamabot.tools.approval import ApprovalMissingError
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


#: The span kinds of execution's tool calls (category ``tool_call``): an atom, a compensating call.
ATOM_SPAN = "atom"
COMPENSATION_SPAN = "compensation"


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
              executor: Executor | None) -> tuple[Any, Exchange[ToolOutcome] | None, str | None]:
    """The atom's resolved inputs and its tool-call exchange, or its raw inputs and why they do not resolve."""
    try:
        inputs = resolve(atom.input, results)
    except KeyError as exc:
        return atom.input, None, f"input refers to atom {exc.args[0]}, which has no result"
    return inputs, tool_call(tools.tool_for(atom), inputs, retry=tools.retry.for_atom(atom), executor=executor), None


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
    """Run one atom synchronously (see the module docstring); its new record. Never raises for a tool's error."""
    started = time.perf_counter()
    inputs, call, cause = _prepared(tools, atom, results, None)
    with _atom_span(atom, inputs) as opened:
        pending = _approval(tools.tool_for(atom), atom, inputs) if call is not None else None
        if pending is not None:
            decided = pending if isinstance(pending, Exception) else decide_call(tools.tool_for(atom), *pending)[0]
            inputs, call, cause = _decided(tools, atom, inputs, decided)
        return _recorded(atom, inputs, None if call is None else run_exchange(call), cause, started, opened)


async def arun_atom(tools: AtomTools, atom: Atom, results: dict[int, Any],
                    executor: Executor | None = None) -> AtomRecord:
    """Async twin of :func:`run_atom`: async tools are awaited, sync tools run in ``executor`` (default: the
    shared tool threads) unless they are marked non-blocking."""
    started = time.perf_counter()
    inputs, call, cause = _prepared(tools, atom, results, executor)
    with _atom_span(atom, inputs) as opened:
        pending = _approval(tools.tool_for(atom), atom, inputs) if call is not None else None
        if pending is not None:
            decided = pending if isinstance(pending, Exception) else (await adecide_call(tools.tool_for(atom), *pending))[0]
            inputs, call, cause = _decided(tools, atom, inputs, decided, executor)
        return _recorded(atom, inputs, None if call is None else await arun_exchange(call), cause, started, opened)


def _approval(tool: Tool, atom: Atom, inputs: Any) -> tuple[PendingCall, Gate] | Exception | None:
    """For an atom whose tool requires approval: the call to decide on and its gate (the run's approver; the
    agent's :func:`~llamabot.agents.approval.approval_gate`, with no decisions given, since AoT runs do not pause),
    or :class:`ApprovalMissingError` when the run has no approver (the atom fails; the tool never runs). ``None``
    when no decision is taken here (not marked, or a durable run, whose steps wait for a person themselves)."""
    if not tool.requires_approval:
        return None
    call = PendingCall(f"atom-{atom.id}", tool.name, inputs if isinstance(inputs, dict) else {"input": inputs}, "")
    try:
        gate = approval_gate({}, call)
    except ApprovalMissingError as missing:
        return missing
    return None if gate == (None, None) else (call, gate)


def _decided(tools: AtomTools, atom: Atom, inputs: Any, decided: dict[str, Any] | Exception | None,
             executor: Executor | None = None) -> tuple[Any, Exchange[ToolOutcome] | None, str | None]:
    """The atom's inputs and call after its approval, or why it does not run (rejected, no approver)."""
    if isinstance(decided, Exception):
        return inputs, None, f"{type(decided).__name__}: {decided}"
    tool = tools.tool_for(atom)
    return decided, tool_call(tool, decided, retry=tools.retry.for_atom(atom), executor=executor), None


def _cause(outcome: ToolOutcome) -> str:
    """Why the atom failed: the argument problems (the plan's inputs were wrong), else the tool's error."""
    if isinstance(outcome.exception, ToolArgumentsError):
        return "; ".join(outcome.exception.errors)
    return outcome.error or "failed"


# -- one layer ------------------------------------------------------------------------------------------------


def run_layer(tools: AtomTools, record: ExecutionRecord, index: int) -> list[AtomRecord]:
    """The atoms of layer ``index``, one by one in id order; the layer always finishes, so the same atoms run as
    in :func:`arun_layer` (an atom's failure does not keep its independent neighbours from running; the failed
    layer's completed atoms are compensated either way). Their new records; ``record`` is not changed
    (:func:`apply_layer` does that)."""
    atoms = layer_atoms(record, index)
    results = layer_results(record, atoms)
    return [run_atom(tools, atom, results) for atom in atoms]


async def arun_layer(tools: AtomTools, record: ExecutionRecord, index: int,
                     threads: LayerThreads | None = None,
                     finished: list[AtomRecord] | None = None) -> list[AtomRecord]:
    """The atoms of layer ``index`` concurrently (``asyncio.gather``; each atom's span is a child of the active
    span, in its own task); the layer always finishes. Blocking sync tools run in ``threads`` (the execution's
    own pool, as wide as its widest layer, so a layer of them overlaps completely), else in the shared tool
    threads. ``finished``, when given, receives each atom's record as soon as it finishes, so a caller that is
    cancelled mid-layer still knows which atoms completed (and must be compensated)."""
    atoms = layer_atoms(record, index)
    results = layer_results(record, atoms)
    pool = None if threads is None or len(atoms) == 1 else threads.for_layer(tools, record, atoms)

    async def one(atom: Atom) -> AtomRecord:
        done = await arun_atom(tools, atom, results, pool)
        if finished is not None:
            finished.append(done)
        return done

    if len(atoms) == 1:
        return [await one(atoms[0])]
    return list(await asyncio.gather(*(one(atom) for atom in atoms)))


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


# -- failure: compensation --------------------------------------------------------------------------------------


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
            errors.append(_compensated(run_exchange(tool_call(tools.compensations[call.tool], call.arguments)), opened))
    return errors


async def arun_compensations(tools: AtomTools, calls: list[CompensationCall]) -> list[str | None]:
    """Async twin of :func:`run_compensations` (still one at a time: the order matters)."""
    errors = []
    for call in calls:
        with _compensation_span(call) as opened:
            outcome = await arun_exchange(tool_call(tools.compensations[call.tool], call.arguments))
            errors.append(_compensated(outcome, opened))
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
        if not apply_layer(record, run_layer(config, record, index), time.perf_counter() - started):
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
            finished: list[AtomRecord] = []
            try:
                done = await arun_layer(config, record, index, threads, finished)
            except asyncio.CancelledError as cancelled:
                await compensate_cancelled(config, record, finished, time.perf_counter() - started)
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


def _non_blocking(tools: dict[str, Tool]) -> dict[str, Tool]:
    return {name: dataclasses.replace(t, blocking=False) for name, t in tools.items()}

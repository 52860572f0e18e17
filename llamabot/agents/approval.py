"""A run paused for approval: the calls waiting for a decision and the checkpoint to continue from.

When a model reply asks for tools marked ``requires_approval=True`` and the run has no way to decide in-process
(no ``approver=``, not a durable run), the run stops *before any call of that reply runs* and raises
:class:`ApprovalRequired`. Its :class:`PausedRun` lists every call of the reply that needs a decision (parallel
calls pause together) and holds the run's checkpoint (plain JSON). ``bot.resume(paused, decisions)`` continues
it, here or in another process, with one :class:`~llamabot.tools.approval.Decision` per call.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llamabot.errors import LlamabotError
from llamabot.graph.checkpoint import Checkpoint
from llamabot.graph.codec import dumps_state
from llamabot.models.exchange import step_runner
from llamabot.observe.tracing import active_run
from llamabot.tools.approval import (
    ApprovalMissingError,
    ApprovalRequest,
    Decision,
    as_decision,
    decided_arguments,
)

#: The run-state key holding the decisions given to a resumed run: call id -> ``Decision.to_dict()``.
DECISIONS = "_approvals"
#: The run's live-values key of the in-process approver.
APPROVER = "approver"
#: The run's live-values key of the classes the state codec may revive besides llamabot's (``bot.state_classes``).
STATE_CLASSES = "state_classes"


@dataclass(frozen=True, slots=True)
class PausedRun:
    """A run waiting for decisions: ``requests`` (the calls, in the model's order), ``checkpoint`` (where it
    continues), ``bot`` (the class that ran it)."""

    requests: tuple[ApprovalRequest, ...]
    checkpoint: Checkpoint
    bot: str = ""

    def to_json(self) -> str:
        return json.dumps({"bot": self.bot, "requests": [r.to_dict() for r in self.requests],
                           "checkpoint": json.loads(self.checkpoint.to_json())})

    @classmethod
    def from_json(cls, text: str) -> PausedRun:
        try:
            data = json.loads(text)
            requests = tuple(ApprovalRequest.from_dict(r) for r in data["requests"])
            checkpoint = Checkpoint.from_json(json.dumps(data["checkpoint"]))
            return cls(requests, checkpoint, str(data.get("bot", "")))
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"not a paused run's JSON: {exc}") from None


class ApprovalRequired(LlamabotError):
    """The run paused before tool calls that need a decision; ``paused`` holds them and the checkpoint.
    ``bot.resume(error.paused, {call_id: Decision.approve(), ...})`` continues the run."""

    def __init__(self, paused: PausedRun):
        self.paused = paused
        calls = ", ".join(f"{r.tool}({json.dumps(r.arguments)[:200]}) [{r.call_id}]" for r in paused.requests)
        super().__init__(f"the run paused for approval of {len(paused.requests)} tool call(s): {calls}; "
                         "continue it with bot.resume(error.paused, {call_id: Decision.approve() or "
                         "Decision.reject(reason)})")

    @property
    def requests(self) -> tuple[ApprovalRequest, ...]:
        return self.paused.requests

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.paused,)


def decisions_for(paused: PausedRun, decisions: Mapping[str, Decision | bool] | None) -> dict[str, dict[str, Any]]:
    """The decisions for a paused run as run-state data (call id -> decision dict). Every waiting call needs
    one; a decision for a call that does not wait is an error (``ValueError`` naming the ids)."""
    waiting = {r.call_id: r for r in paused.requests}
    if decisions is not None and not isinstance(decisions, Mapping):
        example = ", ".join(f"{call_id!r}: Decision.approve()" for call_id in waiting)
        raise TypeError(f"decisions must map each waiting call id to its decision, got a {type(decisions).__name__}: "
                        f"write {{{example}}} (or Decision.reject(reason), True, False)")
    decisions = dict(decisions or {})
    unknown = sorted(decisions.keys() - waiting.keys())
    if unknown:
        raise ValueError(f"decisions for calls that do not wait for approval: {unknown}; waiting: {sorted(waiting)}")
    missing = sorted(waiting.keys() - decisions.keys())
    if missing:
        raise ValueError(f"no decision for the waiting call(s) {missing}: decide every call "
                         "(Decision.approve(), Decision.approve(arguments=...) or Decision.reject(reason))")
    out: dict[str, dict[str, Any]] = {}
    for call_id, value in decisions.items():
        if value is True:
            value = Decision.approve()
        elif value is False:
            value = Decision.reject()
        if type(value) is not Decision:
            raise TypeError(f"the decision for call {call_id!r} is a {type(value).__name__}; "
                            "use Decision.approve(...), Decision.reject(...), True or False")
        out[call_id] = value.to_dict()
    return out


def pause_for_approval(shared: dict[str, Any], calls: Any, tools: Mapping[str, Any], node: str,
                       action: str) -> None:
    """Raise :class:`ApprovalRequired` when a call of this reply needs a decision the run cannot get in-process:
    a tool with ``requires_approval``, no decision in the state, no approver, not a durable run (whose steps wait
    for a person themselves). The checkpoint continues the run at ``node``'s ``action`` (the first call's tool
    node), so no call of the reply has run."""
    decided = shared.get(DECISIONS) or {}
    requests = tuple(
        ApprovalRequest(c.id, c.name, dict(c.arguments)) for c in calls
        if (t := tools.get(c.name)) is not None and t.requires_approval and c.id not in decided
    )
    if not requests:
        return
    run = active_run()
    values = run[0].values if run is not None else {}
    if values.get(APPROVER) is not None or step_runner() is not None:
        return
    raise _paused(shared, requests, node, action)


def pause_for_inner(shared: dict[str, Any], node: str, action: str, inner: ApprovalRequired) -> ApprovalRequired:
    """The pause of an outer run whose tool call (an agent used as a tool) paused an inner run: the inner calls,
    and the outer checkpoint at ``node``'s ``action``, so that resuming runs the call again (it then continues the
    inner run, kept in the state by the caller)."""
    return _paused(shared, inner.requests, node, action)


def _paused(shared: dict[str, Any], requests: tuple[ApprovalRequest, ...], node: str, action: str) -> ApprovalRequired:
    """A run paused for ``requests``, its checkpoint the state now at ``node``'s ``action``."""
    run = active_run()
    allowed = run[0].values.get(STATE_CLASSES, ()) if run is not None else ()
    state = dumps_state(shared, allowed=allowed)
    return ApprovalRequired(PausedRun(requests, Checkpoint(node, action, state, shared.get("trace_id", ""))))


#: What a tool node needs to call a tool that requires approval: the decision given to the run, or the
#: approver that decides now (``None`` for both: a durable run, whose step runner waits for a person).
Gate = tuple["Decision | None", Any]


def approval_gate(shared: dict[str, Any], call: Any) -> Gate:
    """The gate of one call of a tool that requires approval (see :data:`Gate`); :class:`ApprovalMissingError`
    when the run has neither a decision, an approver nor a durable step runner (a custom graph whose decision
    node did not pause): the tool never runs without a decision. In a durable run the step runner alone decides
    (it waits for a person), so the gate is ``(None, None)`` there: a call is never decided twice."""
    given = (shared.get(DECISIONS) or {}).get(call.id)
    if given is not None:
        return Decision.from_dict(given), None
    if step_runner() is not None:
        return None, None
    run = active_run()
    approver = run[0].values.get(APPROVER) if run is not None else None
    if approver is None:
        raise ApprovalMissingError(call.name, call.id)
    return None, approver


#: What deciding on a call gives: the arguments to call the tool with, or the error the model is shown (see
#: :func:`~llamabot.tools.approval.decided_arguments`); and the decision taken (``None`` in a durable run).
Decided = tuple["dict[str, Any] | Exception", "Decision | None"]


def decide_call(tool: Any, call: Any, gate: Gate) -> Decided:
    """Sync: decide on ``call`` of ``tool`` (see :data:`Decided`), asking the approver when the gate has one."""
    decision, approver = gate
    if decision is None and approver is not None:
        request = ApprovalRequest(call.id, call.name, dict(call.arguments))
        answer = approver(request)
        if inspect.isawaitable(answer):
            getattr(answer, "close", lambda: None)()
            raise TypeError(f"the approver of {call.name!r} is async; use it in async runs (arun, astream)")
        decision = as_decision(answer, request)
    return _decided(tool, call, decision)


async def adecide_call(tool: Any, call: Any, gate: Gate) -> Decided:
    """Async twin of :func:`decide_call`: the approver may be a coroutine function."""
    decision, approver = gate
    if decision is None and approver is not None:
        request = ApprovalRequest(call.id, call.name, dict(call.arguments))
        answer = approver(request)
        if inspect.isawaitable(answer):
            answer = await answer
        decision = as_decision(answer, request)
    return _decided(tool, call, decision)


def _decided(tool: Any, call: Any, decision: Decision | None) -> Decided:
    return (call.arguments if decision is None else decided_arguments(tool, call.arguments, decision)), decision

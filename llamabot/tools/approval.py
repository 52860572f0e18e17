"""Approvals: a tool marked ``requires_approval=True`` never runs without a person's (or an approver's) decision.

Plain data and pure functions, shared by every kind of run:

- :class:`ApprovalRequest`: the call waiting for a decision (call id, tool, arguments as the model gave them);
- :class:`Decision`: approve (optionally with edited arguments, validated against the tool's schema), or reject
  with a reason (the model is shown the rejection as the tool's result);
- :func:`as_decision` turns what an ``approver`` callback returned (a ``Decision``, or ``True``/``False``) into a
  decision; :func:`decided_arguments` applies one to a call.

Where the decision comes from depends on the run: a decision given to ``bot.resume(paused, decisions)``, the
bot's or the run's ``approver=`` callback, or, in durable runs, a person through ``llamabot runs approve|reject``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from llamabot.errors import LlamabotError, ToolArgumentsError
from llamabot.tools.tool import Tool

Verdict = Literal["approve", "reject"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call that waits for a decision: ``call_id`` (the model's id of the call), ``tool``, ``arguments``."""

    call_id: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "tool": self.tool, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: Any) -> ApprovalRequest:
        if (not isinstance(data, Mapping) or not isinstance(data.get("call_id"), str)
                or not isinstance(data.get("tool"), str) or not isinstance(data.get("arguments", {}), dict)):
            raise ValueError(f"not an approval request: {data!r:.200}")
        return cls(data["call_id"], data["tool"], dict(data.get("arguments", {})))


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision on one tool call: ``Decision.approve()``, ``Decision.approve(arguments={...})`` (run with these
    arguments instead, checked against the tool's schema) or ``Decision.reject("reason")``."""

    verdict: Verdict
    arguments: dict[str, Any] | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in ("approve", "reject"):
            raise ValueError(f"a decision's verdict is 'approve' or 'reject', got {self.verdict!r}")
        if self.arguments is not None and not isinstance(self.arguments, dict):
            raise TypeError(f"a decision's arguments are a dict, got {type(self.arguments).__name__}")
        if self.verdict == "reject" and self.arguments is not None:
            raise ValueError("a rejection carries a reason, not arguments")
        if not isinstance(self.reason, str):
            raise TypeError(f"a decision's reason is a string, got {type(self.reason).__name__}")

    @classmethod
    def approve(cls, arguments: dict[str, Any] | None = None) -> Decision:
        return cls("approve", arguments)

    @classmethod
    def reject(cls, reason: str = "") -> Decision:
        return cls("reject", None, reason)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "arguments": self.arguments, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Any) -> Decision:
        if not isinstance(data, Mapping):
            raise ValueError(f"not a decision: {data!r:.200}")
        return cls(data.get("verdict"), data.get("arguments"), data.get("reason") or "")  # type: ignore[arg-type]


#: ``approver(request)`` decides in-process: a :class:`Decision`, or ``True`` (approve) / ``False`` (reject); in
#: async runs it may be a coroutine function.
Approver = Callable[[ApprovalRequest], "Decision | bool | Awaitable[Decision | bool]"]


class ToolRejectedError(LlamabotError):
    """A tool call was rejected. Never raised: it is the tool's outcome, shown to the model
    (``"ToolRejectedError: ..."``)."""

    def __init__(self, tool: str, reason: str = ""):
        self.tool, self.reason = tool, reason
        super().__init__(f"a person rejected the call of tool {tool!r}" + (f": {reason}" if reason else ""))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.tool, self.reason)


class ApprovalMissingError(LlamabotError, RuntimeError):
    """A tool that requires approval was reached with no decision and no way to get one (a custom graph whose
    decision node does not pause): the tool did not run."""

    def __init__(self, tool: str, call_id: str):
        self.tool, self.call_id = tool, call_id
        super().__init__(
            f"tool {tool!r} (call {call_id!r}) requires approval and the run has no decision for it: give the bot "
            "an approver=..., or decide with bot.resume(paused, decisions) after the run pauses; the tool did not run"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.tool, self.call_id)


def as_decision(value: Any, request: ApprovalRequest) -> Decision:
    """What an approver returned, as a :class:`Decision`; ``TypeError`` naming the call for anything else."""
    if type(value) is Decision:
        return value
    if value is True:
        return Decision.approve()
    if value is False:
        return Decision.reject("rejected by the approver")
    raise TypeError(f"the approver returned {type(value).__name__} for the call of {request.tool!r} "
                    f"({request.call_id}); return a Decision, True or False")


def decided_arguments(tool: Tool, arguments: dict[str, Any], decision: Decision) -> dict[str, Any] | Exception:
    """The arguments to call ``tool`` with after ``decision``: the model's (approved as they are), the edited ones
    validated against the tool's schema, or the error the model is shown instead (a rejection, invalid edited
    arguments)."""
    if decision.verdict == "reject":
        return ToolRejectedError(tool.name, decision.reason)
    if decision.arguments is None:
        return arguments
    try:
        return tool.validate(decision.arguments)
    except ToolArgumentsError as exc:
        return exc

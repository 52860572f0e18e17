"""The approval protocol between a waiting run and the person who decides: plain data, no I/O.

A run that reaches a tool with ``requires_approval`` publishes a *pending* record as the DBOS event
:data:`APPROVAL_EVENT` (tool, arguments, and ``request``: the number of this approval within the run), then waits
durably for a message on :data:`APPROVAL_TOPIC`. A decision message names the ``request`` it answers, so a stale
or duplicated decision is never applied to a later tool call of the same run. After the decision the event is
replaced by a *decided* record, which is how ``approve`` on a run that no longer waits is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from llamabot.durable.errors import NotStorableError

APPROVAL_EVENT = "llamabot.approval"
APPROVAL_TOPIC = "llamabot.approval"
#: Seconds of one durable wait for a decision; the run waits again after each (a wait can last any time).
WAIT_S = 3600.0

Verdict = Literal["approve", "reject"]


@dataclass(frozen=True, slots=True)
class Decision:
    """A person's answer to approval ``request`` of a run: approve (optionally with edited ``arguments``) or
    reject (``reason`` is shown to the model as the tool's result)."""

    request: int
    verdict: Verdict
    arguments: dict[str, Any] | None = None
    reason: str = ""

    def to_message(self) -> dict[str, Any]:
        return {"request": self.request, "verdict": self.verdict, "arguments": self.arguments, "reason": self.reason}

    @classmethod
    def from_message(cls, message: Any) -> Decision | None:
        """The decision in a received message, or ``None`` for anything that is not one (ignored by the run)."""
        if not isinstance(message, dict) or message.get("verdict") not in ("approve", "reject"):
            return None
        arguments = message.get("arguments")
        if not isinstance(message.get("request"), int) or not (arguments is None or isinstance(arguments, dict)):
            return None
        return cls(message["request"], message["verdict"], arguments, str(message.get("reason") or ""))


def pending_record(request: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The event a waiting run publishes (``arguments``: what the model asked for, as JSON data)."""
    return {"waiting": True, "request": request, "tool": tool, "arguments": arguments}


def decided_record(request: int, tool: str, decision: Decision) -> dict[str, Any]:
    return {"waiting": False, "request": request, "tool": tool, "verdict": decision.verdict,
            "arguments": decision.arguments, "reason": decision.reason}


def json_data(value: Any, what: str) -> Any:
    """``value`` as plain JSON data (a deep copy); :class:`NotStorableError` naming ``what`` when it has a part
    JSON cannot hold (a set, bytes, an object...)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise NotStorableError(
            f"{what} cannot be stored as JSON with the durable run ({exc}); use strings, numbers, booleans, "
            "None, lists and dicts with string keys"
        ) from None

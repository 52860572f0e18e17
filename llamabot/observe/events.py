"""Run events: what an agent run reports as it goes (for streaming progress from a service)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal["decision", "tool_started", "tool_finished", "final_answer", "error"]


@dataclass(slots=True, frozen=True)
class RunEvent:
    """One step of a run. ``data`` depends on ``kind``:

    - ``decision``: ``calls`` (tool names chosen), ``errors`` (invalid calls), ``iteration``;
    - ``tool_started``: ``tool``, ``arguments``;
    - ``tool_finished``: ``tool``, ``result`` or ``error``, ``duration_s``;
    - ``final_answer``: ``result``;
    - ``error``: ``error`` (the run failed with this exception text).
    """

    kind: EventKind
    trace_id: str
    data: dict[str, Any] = field(default_factory=dict)

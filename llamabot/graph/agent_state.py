"""The shared-state contract of the agent graph, and the conversation window sent to the model. Pure.

Keys (as in the AgentBot LLD; ``memory`` holds chat messages rather than strings, see the agentbot LLD):

| key | meaning |
|---|---|
| ``memory`` | the conversation: user turn, assistant turns with ``tool_calls``, ``tool`` results |
| ``func_call`` | the :class:`PendingCall` the next tool node runs; set by the decision node |
| ``globals_dict`` | the caller's variables, injected into tools' hidden ``_globals_dict`` |
| ``iteration_count`` | model decisions made in this run |
| ``_force_terminate`` | set once ``max_iterations`` is exceeded |
| ``result`` | what the terminal tool returned |
| ``trace_id`` | the run's trace id |

Private keys: ``_trace`` (the Trace), ``_pending`` (calls queued from one reply), ``_run_start`` (index of this
run's user turn in ``memory``), ``_errors`` (consecutive failed steps), ``_emit`` (event sink or None),
``_decision_span`` (parent span of the next tool call), ``_done`` (a terminal tool finished: the only way a
run returns a result).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llamabot.models.messages import Message, user
from llamabot.observe.tracing import Trace


@dataclass(slots=True)
class PendingCall:
    """A validated tool call waiting to run. ``synthetic`` calls were not written by the model as a tool call
    (text routed to ``respond_to_user``), so no ``tool`` result message is added for them."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str
    synthetic: bool = False


def new_run_state(
    query: str,
    *,
    memory: list[Message],
    globals_dict: dict[str, Any] | None,
    trace: Trace,
    emit: Callable[[Any], None] | None = None,
) -> dict[str, Any]:
    """A fresh shared dict for one run. ``memory`` may be carried over (a notebook conversation); everything
    else starts anew, so no run ever sees another run's counters, queue or result."""
    memory.append(user(query))
    return {
        "memory": memory,
        "func_call": None,
        "globals_dict": globals_dict if globals_dict is not None else {},
        "iteration_count": 0,
        "_force_terminate": False,
        "result": None,
        "trace_id": trace.trace_id,
        "_trace": trace,
        "_pending": deque(),
        "_run_start": len(memory) - 1,
        "_errors": 0,
        "_emit": emit,
        "_decision_span": None,
        "_done": False,
    }


def conversation_window(memory: list[Message], run_start: int, limit: int | None) -> list[Message]:
    """The messages to send: this run's user turn plus at most ``limit`` later messages, preceded by the
    recent earlier history while the budget lasts. A window never starts with an orphan ``tool`` result
    (providers reject a tool message whose assistant turn was cut off)."""
    if limit is None or len(memory) <= limit + 1:
        return memory
    query = memory[run_start]
    after = memory[run_start + 1 :]
    if len(after) >= limit:
        tail = _drop_orphans(after[-limit:])
        return [query, *tail]
    budget = limit - len(after)
    before = _drop_orphans(memory[max(0, run_start - budget) : run_start])
    return [*before, query, *after]


def _drop_orphans(messages: list[Message]) -> list[Message]:
    start = 0
    while start < len(messages) and messages[start].get("role") == "tool":
        start += 1
    return messages[start:]

"""The agent graph's run state, and the conversation window sent to the model. Pure.

The shared dict holds data only, so it can be saved as JSON at any node boundary (see
:mod:`llamabot.graph.codec`) and a run continued from it; live handles (the trace, hooks, the caller's
``globals_dict``) live in the run's context (:class:`llamabot.observe.tracing.RunContext`).

| key | meaning |
|---|---|
| ``memory`` | the conversation: user turn, assistant turns with ``tool_calls``, ``tool`` results |
| ``func_call`` | the :class:`PendingCall` the next tool node runs; set by the decision node |
| ``iteration_count`` | model decisions made in this run |
| ``result`` | what the terminal tool returned |
| ``trace_id`` | the run's trace id |
| ``_pending`` | calls queued from one reply, in order |
| ``_run_start`` | index of this run's user turn in ``memory`` |
| ``_errors`` | consecutive failed steps |
| ``_done`` | a terminal tool finished: the only way a run returns a result |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llamabot.models.messages import Message, tool_result, user


@dataclass(slots=True)
class PendingCall:
    """A validated tool call waiting to run. ``synthetic`` calls were not written by the model as a tool call
    (text routed to ``respond_to_user``), so no ``tool`` result message is added for them."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str
    synthetic: bool = False


def new_run_state(query: str, *, memory: list[Message], trace_id: str = "") -> dict[str, Any]:
    """A fresh shared dict for one run. ``memory`` may be carried over (a notebook conversation); everything
    else starts anew, so no run ever sees another run's counters, queue or result."""
    memory.append(user(query))
    return {
        "memory": memory,
        "func_call": None,
        "iteration_count": 0,
        "result": None,
        "trace_id": trace_id,
        "_pending": [],
        "_run_start": len(memory) - 1,
        "_errors": 0,
        "_done": False,
    }


def answer_open_calls(memory: list[Message], start: int, text: str) -> int:
    """Answer every assistant tool call from ``memory[start:]`` that has no ``tool`` result yet with ``text``, so
    the conversation satisfies the OpenAI rule (each tool call answered before the next turn) whatever happened
    to the run. Returns how many calls were answered here."""
    answered = {m.get("tool_call_id") for m in memory[start:] if m.get("role") == "tool"}
    missing = [
        (call["id"], call["function"]["name"])
        for m in memory[start:] if m.get("role") == "assistant"
        for call in m.get("tool_calls") or () if call["id"] not in answered
    ]
    for call_id, name in missing:
        memory.append(tool_result(call_id, name, text))
    return len(missing)


def conversation_window(memory: list[Message], run_start: int, limit: int | None) -> list[Message]:
    """The messages to send: this run's user turn plus at most ``limit`` later messages, preceded by the
    recent earlier history while the budget lasts.

    The window is cut between turns, never inside one: an assistant message and the ``tool`` results that
    answer it are kept or dropped together, so a window never starts with an orphan ``tool`` result (providers
    reject one whose assistant turn was cut off). The newest turn is always kept whole, even when it alone
    holds more than ``limit`` messages (a reply that made ``limit`` or more calls): the model must see the
    results of the calls it just made. The cost is that of copying the window, whatever the history's length:
    each cut is found where the budget ends, not by walking the turns."""
    if limit is None or len(memory) <= limit + 1:
        return memory
    after = run_start + 1  # this run's messages after its user turn: memory[after:]
    first = _turns_start(memory, after, len(memory), limit, keep_newest=True)
    if first > after:  # not all of this run's turns fit: its user turn, then the newest of them
        return [memory[run_start], *memory[first:]]
    # all of them fit: the earlier history that fits the rest of the budget, contiguous with them
    return memory[_turns_start(memory, 0, run_start, limit - (len(memory) - after), keep_newest=False):]


def _turns_start(messages: list[Message], begin: int, end: int, budget: int, *, keep_newest: bool) -> int:
    """Where the longest run of whole turns at the end of ``messages[begin:end]`` that fits ``budget`` messages
    starts (the newest turn whatever its size when ``keep_newest``); ``end`` when none is kept.

    A turn is a message other than a ``tool`` result with the results that follow it, so a window may start at
    any message that is not a result: the first of those at or after ``end - budget``. Results with no such
    message before them in ``messages[begin:end]`` (their assistant turn is not there) are never kept."""
    first = min(max(end - budget, begin), end)
    while first < end and messages[first].get("role") == "tool":
        first += 1
    if first == end and keep_newest and end > begin:  # the newest turn alone is over the budget: it, whole
        first = end - 1
        while first > begin and messages[first].get("role") == "tool":
            first -= 1
        if messages[first].get("role") == "tool":  # only results: an orphan turn
            return end
    return first

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
    results of the calls it just made."""
    if limit is None or len(memory) <= limit + 1:
        return memory
    query = memory[run_start]
    after = memory[run_start + 1 :]
    tail = _newest_turns(after, limit, keep_newest=True)
    if len(tail) < len(after):
        return [query, *tail]
    before = _newest_turns(memory, limit - len(after), keep_newest=False, end=run_start)
    return [*before, query, *after]


def _newest_turns(messages: list[Message], budget: int, *, keep_newest: bool, end: int | None = None) -> list[Message]:
    """The longest run of whole turns at the end of ``messages[:end]`` that fits ``budget`` messages (the newest
    turn whatever its size when ``keep_newest``), without a leading orphan ``tool`` result.

    A turn is a message other than a ``tool`` result with the results that follow it; results at the very start
    (their assistant turn is not there) are an orphan turn, never kept. Walks back from ``end`` and stops at the
    first turn that does not fit, so the cost is the window's size, not the conversation's."""
    end = len(messages) if end is None else end
    first = end  # the window is messages[first:end]
    while first > 0:
        begin = first - 1
        while begin > 0 and messages[begin].get("role") == "tool":
            begin -= 1
        if messages[begin].get("role") == "tool":  # results whose assistant turn is not here
            break
        if end - begin > budget and not (keep_newest and first == end):
            break
        first = begin
    return messages[first:end]

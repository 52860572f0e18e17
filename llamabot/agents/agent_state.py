"""The agent graph's run state, and the conversation window sent to the model. Pure.

The shared dict holds data only, so it can be saved as JSON at any node boundary (see
:mod:`llamabot.graph.codec`) and a run continued from it; live handles (the trace, hooks, the caller's
``globals_dict``) live in the run's context (:class:`llamabot.observe.tracing.LiveRun`).

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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from llamabot.errors import ToolArgumentsError, excerpt
from llamabot.graph.codec import StateCodecError
from llamabot.models.messages import Message, tool_result, user
from llamabot.tools.call import ToolOutcome, shown
from llamabot.tools.tool import DECIDE, Tool


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
    else starts anew, so no run ever sees another run's counters, queue or result. ``query`` must be a str
    (``TypeError`` otherwise: None, bytes or a dict never reach the model)."""
    if not isinstance(query, str):
        raise TypeError(
            f"the query of an agent run must be a str (the user's message), not a {type(query).__name__}: "
            f"{excerpt(query, 80)}"
        )
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


#: What the conversation says of a call that was running early when its run ended (it was cancelled).
STOPPED = "Stopped: the run ended while this call was running; it may have had effects."


def answer_open_calls(memory: list[Message], start: int, text: str,
                      early: Mapping[str, ToolOutcome | None] | None = None) -> int:
    """Answer every assistant tool call from ``memory[start:]`` that has no ``tool`` result yet with ``text``, so
    the conversation satisfies the OpenAI rule (each tool call answered before the next turn) whatever happened
    to the run; a call that ran early (``early``: its outcome, ``None`` if it was stopped) is answered with what it
    did instead, never "not run". Returns how many calls were answered here."""
    answered = {m.get("tool_call_id") for m in memory[start:] if m.get("role") == "tool"}
    missing = [
        (call["id"], call["function"]["name"])
        for m in memory[start:] if m.get("role") == "assistant"
        for call in m.get("tool_calls") or () if call["id"] not in answered
    ]
    early = early or {}
    for call_id, name in missing:
        memory.append(tool_result(call_id, name, _early_text(early[call_id], name) if call_id in early else text))
    return len(missing)


def _early_text(outcome: ToolOutcome | None, name: str) -> str:
    if outcome is None:
        return STOPPED
    outcome = shown(outcome, name)
    return f"Error: {outcome.error}" if outcome.error is not None else outcome.text


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


#: The keys of a run state and the types their values take (``result``: anything).
_STATE_TYPES: dict[str, tuple[type, ...]] = {
    "memory": (list,), "func_call": (PendingCall, type(None)), "iteration_count": (int,), "trace_id": (str,),
    "_pending": (list,), "_run_start": (int,), "_errors": (int,), "_done": (bool,),
}
_CALL_TYPES = {"id": str, "name": str, "arguments": dict, "raw_arguments": str, "synthetic": bool}


def restored_run_state(state: Any, action: str | None, tools: Mapping[str, Tool]) -> str | None:
    """Check an agent run state a checkpoint gave back before the run continues, and the action to follow.

    The state must have the keys and types of :func:`new_run_state` (``StateCodecError`` naming the key
    otherwise). The calls waiting to run were validated by the decision node when the model made them; a
    checkpoint may have been tampered with since, so each is validated again against its tool's schema: an
    invalid one (or one naming no tool of the bot, or not the tool ``action`` leads to) is answered with the
    error, as the decision node answers an invalid call, and counted as a failed step. When the call the
    checkpoint's ``action`` was about to run is invalid, the run goes back to the decision instead (``DECIDE``).
    """
    _check_shape(state)
    state["_pending"][:] = [call for call in state["_pending"] if _valid_call(call, tools, None, state)]
    call = state["func_call"]
    if action is None or action not in tools:  # the next node is a decision: func_call already ran
        return action
    if call is None:
        raise StateCodecError("state['func_call']", f"no call, where the checkpoint's action runs tool {action!r}")
    if _valid_call(call, tools, action, state):
        return action
    state["func_call"] = None
    return DECIDE


def _check_shape(state: Any) -> None:
    if type(state) is not dict:
        raise StateCodecError("state", f"an agent run state is a dict, not a {type(state).__name__}")
    for key, types in _STATE_TYPES.items():
        if key not in state:
            raise StateCodecError(f"state[{key!r}]", "missing (an agent run state has the keys of new_run_state)")
        if type(state[key]) not in types:
            expected = " or ".join("None" if t is type(None) else t.__name__ for t in types)
            raise StateCodecError(f"state[{key!r}]", f"a {type(state[key]).__name__} where {expected} was expected")
    for index, message in enumerate(state["memory"]):
        if type(message) is not dict or not isinstance(message.get("role"), str):
            raise StateCodecError(f"state['memory'][{index}]", "not a chat message (a dict with a str 'role')")
    if not 0 <= state["_run_start"] < len(state["memory"]):
        raise StateCodecError("state['_run_start']", f"{state['_run_start']} is not an index of the memory")
    for index, call in enumerate(state["_pending"]):
        if type(call) is not PendingCall:
            raise StateCodecError(f"state['_pending'][{index}]", f"a {type(call).__name__}, not a PendingCall")
    calls = [(f"state['_pending'][{i}]", call) for i, call in enumerate(state["_pending"])]
    if state["func_call"] is not None:
        calls.append(("state['func_call']", state["func_call"]))
    asked = {c.get("id") for m in state["memory"][state["_run_start"]:] if m["role"] == "assistant"
             for c in m.get("tool_calls") or () if type(c) is dict}
    for where, call in calls:
        for name, kind in _CALL_TYPES.items():
            if type(getattr(call, name)) is not kind:
                raise StateCodecError(f"{where}.{name}", f"a {type(getattr(call, name)).__name__}, not a {kind.__name__}")
        if not call.synthetic and call.id not in asked:
            raise StateCodecError(f"{where}.id", f"{excerpt(call.id, 80)} is no tool call the model made in this run")


def _valid_call(call: PendingCall, tools: Mapping[str, Tool], action: str | None, state: dict[str, Any]) -> bool:
    """Whether ``call`` may run (its arguments replaced by freshly validated ones); if not, it is answered with
    the error in ``state["memory"]`` and counted in ``state["_errors"]``."""
    tool = tools.get(call.name)
    if tool is None or (action is not None and call.name != action):
        error = f"there is no tool {call.name!r} here" if tool is None else f"the run was at tool {action!r}"
    else:
        try:
            call.arguments = tool.validate(to_jsonable_python(call.arguments))
            return True
        except ToolArgumentsError as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - arguments that are not data (pydantic cannot serialise them)
            error = f"invalid arguments for tool {call.name!r}: {type(exc).__name__}"
    message = f"Error: {error}. Fix the call and try again."
    state["memory"].append(tool_result(call.id, call.name, message) if not call.synthetic else user(message))
    state["_errors"] += 1
    return False


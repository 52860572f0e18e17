"""The reusable graph nodes of the agent: ``DecideNode`` picks tools, ``FuncNode`` runs one tool.

Both are :class:`DualNode`s: ``prep`` and ``post`` are written once, ``exec`` has a sync and an async twin that
differ only in how the model (or an async tool) is awaited. Per-run state lives in the shared dict only
(see :mod:`agent_state`), so one node serves any number of concurrent runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.bot.toolbot import ToolBot, ToolBotReply
from llamabot.graph.agent_state import PendingCall, conversation_window
from llamabot.graph.decision import RESPOND, decide
from llamabot.observe.events import RunEvent
from llamabot.graph.flow import DualNode
from llamabot.errors import LlamabotError
from llamabot.models.messages import Message, tool_result, user
from llamabot.models.seam import model_family
from llamabot.tools.tool import DECIDE, Tool
from llamabot.observe.tracing import _ACTIVE, span

FORCE_MESSAGE = (
    "You have used all allowed steps. Answer the user now with respond_to_user, using what you know so far."
)


def force_message(final_toolbot: ToolBot) -> str:
    """The last user message of a forced decision: :data:`FORCE_MESSAGE`, or, when the final toolbot is forced to
    another terminal tool (ANoT's ``done``), the same request naming that tool."""
    choice = final_toolbot.tool_choice
    if isinstance(choice, str) and choice not in ("auto", "required", "none", RESPOND):
        return f"You have used all allowed steps. Finish now with {choice}()."
    return FORCE_MESSAGE


class ToolExecutionError(LlamabotError, RuntimeError):
    """A tool kept failing: raised after the bounded number of consecutive failures."""

    def __init__(self, tool: str, arguments: Any, cause: str):
        self.tool, self.arguments, self.cause = tool, arguments, cause
        super().__init__(f"tool {tool!r} failed with arguments {arguments!r}: {cause}")


def _emit(shared: dict[str, Any], kind: str, **data: Any) -> None:
    sink = shared["_emit"]
    if sink is not None:
        sink(RunEvent(kind, shared["trace_id"], data))  # type: ignore[arg-type]


@dataclass(slots=True)
class DecideInput:
    window: list[Message] | None  # None: a queued call is next, no model call
    force: bool


class DecideNode(DualNode):
    """Ask the model (through ``ToolBot``'s exchange) which tools to call next; route to the first one.

    ``final_toolbot`` (forced to ``respond_to_user``) is used once ``max_iterations`` is exceeded.
    ``max_errors``: consecutive invalid replies tolerated before ``ValueError``.
    ``history_limit``: at most this many messages after the run's user turn are sent.
    """

    name = "decide"

    def __init__(
        self,
        toolbot: ToolBot,
        final_toolbot: ToolBot | None = None,
        *,
        max_iterations: int = 10,
        max_errors: int = 3,
        history_limit: int | None = 40,
    ):
        super().__init__()
        self.toolbot = toolbot
        self.final_toolbot = final_toolbot
        self.max_iterations = max_iterations
        self.max_errors = max_errors
        self.history_limit = history_limit
        self.family = model_family(toolbot.model)

    def prep(self, shared: dict[str, Any]) -> DecideInput:
        if shared["_pending"]:
            return DecideInput(None, False)
        shared["iteration_count"] += 1
        force = shared["iteration_count"] > self.max_iterations
        if force:
            shared["_force_terminate"] = True
        return DecideInput(conversation_window(shared["memory"], shared["_run_start"], self.history_limit), force)

    def _exchange(self, inp: DecideInput) -> Exchange[ToolBotReply]:
        if not inp.force:
            return self.toolbot.exchange_messages(inp.window)
        return self._forced_exchange(inp)

    def _forced_exchange(self, inp: DecideInput) -> Exchange[ToolBotReply]:
        if self.final_toolbot is None:
            raise RuntimeError(
                f"max_iterations ({self.max_iterations}) exceeded and no {RESPOND!r} tool is registered to end the run"
            )
        return (yield from self.final_toolbot.exchange_messages([*inp.window, user(force_message(self.final_toolbot))]))

    def exec(self, inp: DecideInput) -> tuple[ToolBotReply, Any] | None:
        if inp.window is None:
            return None
        with span("decision", "decision", forced=inp.force) as current:
            reply = run_exchange(self._exchange(inp), self.toolbot.model)
        return reply, current

    async def exec_async(self, inp: DecideInput) -> tuple[ToolBotReply, Any] | None:
        if inp.window is None:
            return None
        with span("decision", "decision", forced=inp.force) as current:
            reply = await arun_exchange(self._exchange(inp), self.toolbot.model)
        return reply, current

    def post(self, shared: dict[str, Any], inp: DecideInput, reply: Any) -> str:
        pending = shared["_pending"]
        if reply is not None:
            outcome, decision_span = reply
            decision = decide(outcome, self.toolbot.tools, self.family)
            shared["memory"].extend(decision.messages)
            shared["_decision_span"] = decision_span
            if decision_span is not None:
                decision_span.attributes["calls"] = [c.name for c in decision.calls]
                if decision.errors:
                    decision_span.attributes["errors"] = decision.errors
            if shared["_emit"] is not None:
                _emit(shared, "decision", calls=[c.name for c in decision.calls], errors=decision.errors,
                      iteration=shared["iteration_count"])
            if inp.force:  # only a terminal tool may run now (respond_to_user was asked for; any terminal ends)
                tools = self.toolbot.tools
                decision.calls = [c for c in decision.calls if c.name in tools and tools[c.name].is_terminal]
                if not decision.calls:  # a hard stop: the model was told to answer and did not
                    raise RuntimeError(
                        f"max_iterations ({self.max_iterations}) exceeded and the model did not call {RESPOND!r} "
                        f"(or another terminal tool) when asked to answer "
                        f"(it chose: {[c.name for c in outcome.tool_calls] or 'no tool'})"
                    )
            if not decision.calls:
                shared["_errors"] += 1
                if shared["_errors"] > self.max_errors:
                    tool, raw = decision.failed_raw or ("?", "")
                    raise ValueError(
                        f"the model made {shared['_errors']} invalid tool calls in a row; last: tool {tool!r} "
                        f"with arguments {raw!r}: {'; '.join(decision.errors)}"
                    )
                return "decide"
            pending.extend(decision.calls)
        call: PendingCall = pending.popleft()
        shared["func_call"] = call
        return call.name


@dataclass(slots=True)
class _OpenSpan:
    trace: Any
    span: Any


@dataclass(slots=True)
class ToolOutcome:
    value: Any = None
    error: str | None = None


class FuncNode(DualNode):
    """Run one ``@tool`` with the arguments the decision node validated; record the result; loop back.

    A tool that raises does not crash the run: the error is the tool's result and the model sees it (at most
    ``max_errors`` consecutive failures, then :class:`ToolExecutionError`). A terminal tool sets
    ``shared["result"]`` and ends the flow.
    """

    def __init__(self, tool: Tool, *, max_errors: int = 3):
        super().__init__()
        self.tool = tool
        self.name = tool.name
        self.max_errors = max_errors

    @property
    def terminal(self) -> bool:
        return self.tool.is_terminal

    def prep(self, shared: dict[str, Any]) -> tuple[PendingCall, dict[str, Any], Any]:
        call: PendingCall = shared["func_call"]
        trace = shared["_trace"]
        opened = _OpenSpan(trace, trace.open(call.name, "tool_call", shared["_decision_span"], arguments=call.arguments))
        if shared["_emit"] is not None:
            _emit(shared, "tool_started", tool=call.name, arguments=call.arguments)
        context = None
        if self.tool.hidden:
            context = {"globals_dict": shared["globals_dict"], "memory": shared["memory"], "trace_id": shared["trace_id"]}
        return call, context, opened

    def exec(self, prep_res: tuple[PendingCall, dict[str, Any], Any]) -> ToolOutcome:
        call, context, opened = prep_res
        if self.tool.is_async:
            return ToolOutcome(error=f"tool {self.tool.name!r} is async; run the agent with AsyncAgentBot.arun")
        token = _ACTIVE.set((opened.trace, opened.span))  # bots called inside the tool nest under its span
        try:
            return ToolOutcome(self.tool.func(**self.tool.inject(call.arguments, context)))
        except Exception as exc:  # noqa: BLE001 - the model sees the failure as the tool's result
            return ToolOutcome(error=f"{type(exc).__name__}: {exc}")
        finally:
            _ACTIVE.reset(token)

    async def exec_async(self, prep_res: tuple[PendingCall, dict[str, Any], Any]) -> ToolOutcome:
        call, context, opened = prep_res
        token = _ACTIVE.set((opened.trace, opened.span))
        try:
            value = self.tool.func(**self.tool.inject(call.arguments, context))
            if self.tool.is_async:
                value = await value
        except Exception as exc:  # noqa: BLE001 - the model sees the failure as the tool's result
            return ToolOutcome(error=f"{type(exc).__name__}: {exc}")
        finally:
            _ACTIVE.reset(token)
        return ToolOutcome(value)

    def post(self, shared: dict[str, Any], prep_res: tuple[PendingCall, dict[str, Any], Any], outcome: ToolOutcome) -> str | None:
        call, _, handle = prep_res
        opened = handle.span
        opened.end = time.perf_counter()
        memory = shared["memory"]
        if outcome.error is not None:
            opened.error = outcome.error
            if not call.synthetic:
                memory.append(tool_result(call.id, call.name, f"Error: {outcome.error}"))
            else:  # the model's text answer could not be delivered: tell it why it is asked again
                memory.append(user(f"Delivering your answer with {call.name} failed: {outcome.error}"))
            _emit(shared, "tool_finished", tool=call.name, error=outcome.error, duration_s=opened.end - opened.start)
            shared["_errors"] += 1
            if shared["_errors"] > self.max_errors:
                raise ToolExecutionError(call.name, call.arguments, outcome.error)
            return self.tool.loopback_name or DECIDE  # terminal tools have a DECIDE edge for this case
        opened.attributes["result"] = outcome.value
        if not call.synthetic:
            memory.append(tool_result(call.id, call.name, outcome.value))
        if shared["_emit"] is not None:
            _emit(shared, "tool_finished", tool=call.name, result=outcome.value, duration_s=opened.end - opened.start)
        shared["_errors"] = 0
        if not self.tool.is_terminal:
            return self.tool.loopback_name or DECIDE
        shared["result"] = outcome.value
        shared["_done"] = True
        for skipped in shared["_pending"]:
            if not skipped.synthetic:
                memory.append(tool_result(skipped.id, skipped.name, f"Not run: the run ended with {call.name}."))
        shared["_pending"].clear()
        _emit(shared, "final_answer", result=outcome.value)
        return None

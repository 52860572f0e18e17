"""The reusable graph nodes of the agent: ``DecideNode`` picks tools, ``FuncNode`` runs one tool.

Both are :class:`DualNode`s: ``prep`` and ``post`` are written once, ``exec`` has a sync and an async twin that
differ only in how the model (or an async tool) is awaited. Per-run state lives in the shared dict only
(see :mod:`agent_state`), live handles in the run's context, so one node serves any number of concurrent runs.
Each decision is a ``decision`` span and each tool call a ``tool_call`` span of the run: the run's hooks see them.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from loguru import logger

from llamabot.agents.agent_state import PendingCall, answer_open_calls, conversation_window
from llamabot.agents.agent_tool import NESTED, keep_nested, nested_context
from llamabot.agents.approval import (
    DECISIONS,
    ApprovalRequired,
    Gate,
    approval_gate,
    pause_for_approval,
    pause_for_inner,
)
from llamabot.agents.decision import RESPOND, decide
from llamabot.agents.gated_call import GatedCall, call_context
from llamabot.agents.parallel_calls import ParallelCalls, settle_early, take_early
from llamabot.bot.toolbot import ToolBot, ToolBotReply
from llamabot.errors import LlamabotError, StructuredOutputError, excerpt
from llamabot.graph.flow import DualNode, node_label
from llamabot.models.messages import Message, tool_result, user
from llamabot.models.resolve import model_family
from llamabot.observe.tracing import active_run, current_run, current_span
from llamabot.tools.call import ToolOutcome, shown
from llamabot.tools.output import typed_output
from llamabot.tools.tool import DECIDE, Tool, as_tool, build_tool

_NAME = attrgetter("name")


async def _nothing() -> None:
    """What a decision that only pops a queued call awaits."""

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


@dataclass(slots=True)
class Forced:
    """What a decision forced to answer (past ``max_iterations``) is given: the conversation window."""

    window: list[Message]


#: What a decision node's ``prep`` hands on: the conversation window (the usual decision; a plain list, nothing
#: made per step), :class:`Forced` around it, or ``None`` when a queued call is next (no model call).
DecideInput = list[Message] | Forced | None


class DecideNode(DualNode):
    """Ask the model (through ``ToolBot``'s exchange) which tools to call next; route to the first one.

    ``final_toolbot`` (forced to ``respond_to_user``) is used once ``max_iterations`` is exceeded.
    ``max_errors``: consecutive invalid replies tolerated before ``ValueError``.
    ``history_limit``: at most this many messages after the run's user turn are sent.
    """

    name = "decide"
    span_kind = "decision"
    span_name = "decision"

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
        for what, value in (("max_iterations", max_iterations), ("max_errors", max_errors),
                            ("history_limit", 0 if history_limit is None else history_limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{what} must be a whole number >= 0{' or None' * (what == 'history_limit')}, "
                                 f"got {value!r}")
        self.toolbot = toolbot
        self.final_toolbot = final_toolbot
        self.max_iterations = max_iterations
        self.max_errors = max_errors
        self.history_limit = history_limit
        self.family = model_family(toolbot.model)
        #: whether any tool of this decision requires approval (only then can a reply pause the run)
        self.approval_tools = any(t.requires_approval for t in toolbot.tools.values())

    def prep(self, shared: dict[str, Any]) -> DecideInput:
        if shared["_pending"]:
            return None
        shared["iteration_count"] += 1
        window = conversation_window(shared["memory"], shared["_run_start"], self.history_limit)
        return window if shared["iteration_count"] <= self.max_iterations else Forced(window)

    def _turn(self, inp: list[Message] | Forced) -> tuple[ToolBot, list[Message]]:
        """The toolbot that takes this decision and the messages it is given (a forced decision: the final
        toolbot, told to answer now)."""
        if type(inp) is not Forced:
            return self.toolbot, inp  # type: ignore[return-value]
        if self.final_toolbot is None:
            raise RuntimeError(
                f"max_iterations ({self.max_iterations}) exceeded and no {RESPOND!r} tool is registered to end the run"
            )
        return self.final_toolbot, [*inp.window, user(force_message(self.final_toolbot))]

    def span_attributes(self, inp: DecideInput) -> dict[str, Any] | None:
        return None if inp is None else {"forced": type(inp) is Forced}

    def exec(self, inp: DecideInput) -> ToolBotReply | None:
        if type(inp) is list:  # the usual decision
            return self.toolbot.turn(inp)
        if inp is None:
            return None
        toolbot, messages = self._turn(inp)
        return toolbot.turn(messages)

    def exec_async(self, inp: DecideInput) -> Awaitable[ToolBotReply | None]:  # type: ignore[override]
        """The turn to await: ``toolbot.aturn``'s coroutine (or a no-op when a queued call is next)."""
        if type(inp) is list:
            return self.toolbot.aturn(inp)
        if inp is None:
            return _nothing()
        toolbot, messages = self._turn(inp)
        return toolbot.aturn(messages)

    def post(self, shared: dict[str, Any], inp: DecideInput, outcome: ToolBotReply | None) -> str:
        pending = shared["_pending"]
        if outcome is not None:
            decision = decide(outcome, self.toolbot.tools, self.family)
            shared["memory"].extend(decision.messages)
            decided = shared.get(DECISIONS)
            if decided:  # a decision is for the call it was given for: a new reply's call reusing its id (text
                for call in decision.calls:  # calls, providers without ids) is a new call and waits for its own
                    decided.pop(call.id, None)
            names = list(map(_NAME, decision.calls))
            active = active_run()  # (the run, this decision's span)
            if active is not None and active[1] is not None:
                attributes = active[1].attributes
                attributes["calls"] = names
                attributes["iteration"] = shared["iteration_count"]
                if decision.errors:
                    attributes["errors"] = decision.errors
            if active is None or active[0].log:
                logger.debug("decision {}: calls {} errors {}", shared["iteration_count"], names, decision.errors)
            if type(inp) is Forced:  # only a terminal tool may run now (respond_to_user was asked for; any terminal ends)
                tools = self.toolbot.tools
                refused = [c for c in decision.calls if c.name not in tools or not tools[c.name].is_terminal]
                decision.calls = [c for c in decision.calls if c not in refused]
                shared["memory"].extend(
                    tool_result(c.id, c.name, "Not run: the run was out of steps and only a final answer was allowed.")
                    for c in refused if not c.synthetic)
                if not decision.calls:  # a hard stop: the model was told to answer and did not
                    raise RuntimeError(
                        f"max_iterations ({self.max_iterations}) exceeded and the model did not call {RESPOND!r} "
                        f"(or another terminal tool) when asked to answer "
                        f"(it chose: {[c.name for c in outcome.tool_calls] or 'no tool'}"
                        + (f"; invalid: {'; '.join(decision.errors)}" if decision.errors else "") + ")"
                    )
            if not decision.calls:
                shared["_errors"] += 1
                if shared["_errors"] > self.max_errors:
                    tool, raw = decision.failed_raw or ("?", "")
                    answer_open_calls(shared["memory"], shared["_run_start"], "Not run: the run failed.",
                                      settle_early(current_run()))
                    if tool == RESPOND and typed_output(self.toolbot.tools.get(RESPOND)) is not None:
                        raise StructuredOutputError("the run's output_type", shared["_errors"], raw, decision.errors)
                    raise ValueError(
                        f"the model made {shared['_errors']} invalid tool calls in a row; last: tool {tool!r} "
                        f"with arguments {excerpt(raw)}: {'; '.join(decision.errors)}"
                    )
                return "decide"
            if pending or len(decision.calls) > 1:
                pending.extend(decision.calls)
            else:  # the usual reply, one call: it runs now, nothing is queued
                pending.append(decision.calls[0])
            call: PendingCall = pending.pop(0)
            shared["func_call"] = call
            # calls of tools that require approval: the run pauses here, before any call of this reply runs
            if self.approval_tools:
                pause_for_approval(shared, decision.calls, self.toolbot.tools, self.span_name, call.name)
            return call.name
        call = pending.pop(0)
        shared["func_call"] = call
        return call.name


#: What a tool node's ``prep`` hands on: the call, its hidden-parameter context, the task that ran it early (async
#: runs, see :mod:`parallel_calls`) and the calls of the same reply still queued behind it.
#: ``gate``: for a tool that requires approval, where its decision comes from (see :mod:`.approval`), else ``None``.
ToolStep = tuple[PendingCall, "dict[str, Any] | None", Any, tuple[PendingCall, ...], "Gate | None"]


class FuncNode(DualNode):
    """Run one ``@tool`` with the arguments the decision node validated; record the result; loop back.

    A tool that raises does not crash the run: the error is the tool's result and the model sees it (at most
    ``max_errors`` consecutive failures, then :class:`ToolExecutionError`). A terminal tool sets
    ``shared["result"]`` and ends the flow. The tool's ``RunContext`` parameter and hidden parameters
    (``_deps``, ``_globals_dict``, ``_memory``, ``_trace_id``) are injected from the run.
    """

    span_kind = "tool_call"
    span_category = "tool_call"

    def __init__(self, tool: Tool | Any, *, max_errors: int = 3, parallel: ParallelCalls | None = None):
        super().__init__()
        if not isinstance(tool, Tool) and not isinstance(getattr(tool, "tool", None), Tool) and callable(tool):
            tool = build_tool(tool)  # a plain typed function: described as @tool would (the function is unchanged)
        tool = as_tool(tool)
        self.tool = tool
        self.name = self.span_name = tool.name
        self.loopback = tool.loopback_name or DECIDE  # where the flow goes after a failed call (and a non-terminal one)
        self.max_errors = max_errors
        self.parallel = parallel

    @property
    def terminal(self) -> bool:
        return self.tool.is_terminal

    def prep(self, shared: dict[str, Any]) -> ToolStep:
        call: PendingCall = shared["func_call"]
        context = early = None
        queued = ()
        if self.tool.hidden or self.parallel is not None:
            active = active_run()
            run = active[0] if active is not None else None
            if self.tool.hidden:
                context = call_context(call, memory=shared["memory"], nested=nested_context(shared, call.id))
            if self.parallel is not None:
                early = take_early(run, call)
                if early is None and shared["_pending"]:
                    queued = tuple(shared["_pending"])
        gate = approval_gate(shared, call) if self.tool.requires_approval else None
        return call, context, early, queued, gate

    def span_attributes(self, prep_res: ToolStep) -> dict[str, Any] | None:
        call = prep_res[0]
        if prep_res[2] is not None:
            return None  # the call ran early and recorded its own span
        return {"arguments": call.arguments, "call_id": call.id}

    # One call of a tool in a run (gated_call, as AoT's atoms make it): validation already done by the decision,
    # hidden parameters injected, the approval decision taken, the tool's timeout and retry policy applied; on the
    # async path sync tools run in worker threads.
    def exec(self, prep_res: ToolStep) -> ToolOutcome:
        call, context, _, _, gate = prep_res
        return GatedCall(self.tool, call, context, gate, validated=True).run()

    def exec_async(self, prep_res: ToolStep) -> Awaitable[ToolOutcome]:  # type: ignore[override]
        """The call to await: the early task, or :meth:`GatedCall.arun`'s coroutine."""
        call, context, early, queued, gate = prep_res
        if early is not None:
            return early
        # more calls of the same reply wait: start those that may run now (see parallel_calls; a tool that
        # requires approval never runs early)
        if queued and gate is None:
            self.parallel.start(current_run(), current_span(), queued)  # type: ignore[union-attr]
        return GatedCall(self.tool, call, context, gate, validated=True).arun()

    def post(self, shared: dict[str, Any], prep_res: ToolStep, outcome: ToolOutcome) -> str | None:
        call = prep_res[0]
        if not call.synthetic:  # the text the model is shown (bounded); a value that cannot be shown fails the call
            outcome = shown(outcome, call.name)
        active = active_run()  # (the run, this step's span)
        log = active is None or active[0].log
        opened = active[1] if active is not None and prep_res[2] is None else None  # an early call wrote its own span
        memory = shared["memory"]
        if shared.get(NESTED):  # this call continued an inner run paused for approval: it is done with it
            shared[NESTED].pop(call.id, None)
        if isinstance(outcome.exception, ApprovalRequired):  # an inner run (an agent used as a tool) paused
            self._pause_outer(shared, call, outcome.exception)
        if outcome.error is not None:
            if log:
                logger.debug("tool {} failed: {}", call.name, outcome.error)
            if opened is not None:
                opened.error = outcome.error
            if not call.synthetic:
                memory.append(tool_result(call.id, call.name, f"Error: {outcome.error}"))
            else:  # the model's text answer could not be delivered: tell it why it is asked again
                memory.append(user(f"Delivering your answer with {call.name} failed: {outcome.error}"))
            shared["_errors"] += 1
            if shared["_errors"] > self.max_errors:
                shared["_pending"].clear()
                answer_open_calls(memory, shared["_run_start"], f"Not run: the run failed after {call.name}.",
                                  settle_early(current_run()))
                raise ToolExecutionError(call.name, call.arguments, outcome.error)
            return self.loopback  # terminal tools have a DECIDE edge for this case
        if log:
            logger.debug("tool {} returned {!r}", call.name, outcome.value)
        if opened is not None:
            opened.attributes["result"] = outcome.value
        if not call.synthetic:
            memory.append(tool_result(call.id, call.name, outcome.text))
        shared["_errors"] = 0
        if self.tool.loopback_name is not None:  # not terminal
            return self.loopback
        shared["result"] = outcome.value
        shared["_done"] = True
        for skipped in shared["_pending"]:
            if not skipped.synthetic:
                memory.append(tool_result(skipped.id, skipped.name, f"Not run: the run ended with {call.name}."))
        shared["_pending"].clear()
        return None


    def _pause_outer(self, shared: dict[str, Any], call: PendingCall, inner: ApprovalRequired) -> None:
        """Pause this run for the calls an inner run paused for: the checkpoint runs this call again on resume
        (from the decision node that leads here), which continues the inner run from its own checkpoint."""
        decide = self.successors.get(DECIDE)
        if decide is None or decide.successors.get(call.name) is not self:  # no way back here: the inner pause
            raise inner
        keep_nested(shared, call.id, inner.paused)
        raise pause_for_inner(shared, decide.span_name or node_label(decide), call.name, inner)


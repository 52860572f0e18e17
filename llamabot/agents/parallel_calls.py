"""Parallel tool calls in async agent runs: the independent calls of one model reply run at the same time.

The agent graph still walks one tool node per call, in the order the model asked, and each node still appends
its call's result to the conversation, so results arrive in the model's order and every rule of the sequential
run holds. What changes on the async path: when the node of a reply's first call runs while more calls of that
reply are queued, it starts the queued ones early, as the async side of a layer
(:func:`llamabot.agents.layer.start_items`: tasks, at most ``limit`` calls at once, its own included), and their
nodes later take the outcome instead of calling the tool. Each early call is a ``tool_call`` span of its own,
beside the node's (same parent), timed as it really ran, and a :class:`~llamabot.agents.gated_call.GatedCall` as
the node's would be: the same context (:func:`~llamabot.agents.gated_call.call_context`: its ``RunContext`` shows
the run's deps and the call's id) and the same tool-call logic.

A call starts early only when nothing can tell it from a sequential run:
- its tool is not terminal (a terminal call ends the run; the calls after it must not run), needs no approval
  and takes no hidden parameter (``_memory`` would differ from what a sequential run shows it);
- the run records no checkpoints (a run continued from a checkpoint must not repeat a call that already ran) and
  is not a durable run (the layer's rule: its steps start one at a time, in order);
- and only the calls up to the first one that fails these rules, so the order of effects stays the model's.

Sync runs never start calls early. When a run fails or is cancelled, calls still running are cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from llamabot.agents.agent_state import PendingCall
from llamabot.agents.gated_call import GatedCall, call_context
from llamabot.agents.layer import check_limit, overlaps, start_items
from llamabot.observe.tracing import LiveRun, Span, close_span, start_span, under
from llamabot.tools.call import ToolOutcome
from llamabot.tools.tool import Tool

#: The run's live values key holding the early calls: call id -> the task running it.
EARLY = "early_tool_calls"


@dataclass(frozen=True, slots=True)
class ParallelCalls:
    """Which tools a bot's runs may call early (``tools``) and how many calls may run at once (``limit``)."""

    tools: Mapping[str, Tool]
    limit: int

    def __post_init__(self) -> None:
        check_limit(self.limit, "the parallel tool call limit")

    def early_tool(self, call: PendingCall) -> Tool | None:
        """The tool to call ``call`` with early, or ``None`` when it must wait for its turn."""
        tool = self.tools.get(call.name)
        if tool is None or call.synthetic or tool.is_terminal or tool.requires_approval:
            return None
        if tool.hidden and tool.hidden != (tool.context_param,):  # a RunContext alone is the same for any order
            return None
        return tool

    def start(self, run: LiveRun | None, step_span: Span | None, queued: Sequence[PendingCall]) -> None:
        """Start the queued calls that may run early (see the module's rules), as tasks kept in the run's live
        values. ``step_span`` is the span of the node step starting them (theirs become its siblings)."""
        if run is None or not overlaps(self.limit, len(queued) + 1):
            return
        if any(hook.sequential for hook in run.hooks):
            return
        early: list[tuple[Tool, PendingCall]] = []
        for call in queued:
            tool = self.early_tool(call)
            if tool is None:
                break
            early.append((tool, call))
        parent = run.trace.spans[step_span.parent_id] if step_span and step_span.parent_id is not None else None
        # the starting node's own call holds the last slot
        tasks = start_items(early, partial(_early_call, parent), self.limit - 1)
        run.values.setdefault(EARLY, {}).update((call.id, task) for (_, call), task in zip(early, tasks, strict=True))


def take_early(run: LiveRun | None, call: PendingCall) -> asyncio.Future[ToolOutcome] | None:
    """The task running ``call`` early, if one was started (it is handed over once)."""
    if run is None:
        return None
    started = run.values.get(EARLY)
    return started.pop(call.id, None) if started else None


def settle_early(run: LiveRun | None) -> dict[str, ToolOutcome | None]:
    """End the early calls of a run that ended without taking them (it failed or was cancelled): those still
    running are cancelled. Returns, per call id, the outcome of each that finished, ``None`` for each stopped
    (what the conversation must say of them: they ran, or may have had effects)."""
    started = run.values.pop(EARLY, None) if run is not None else None
    settled: dict[str, ToolOutcome | None] = {}
    for call_id, task in (started or {}).items():
        if not task.done():
            task.cancel()
            settled[call_id] = None
        elif task.cancelled() or task.exception() is not None:  # retrieved: the run's own error is what is raised
            settled[call_id] = None
        else:
            settled[call_id] = task.result()
    return settled


async def _early_call(parent: Span | None, early: tuple[Tool, PendingCall]) -> ToolOutcome:
    tool, call = early
    with under(parent):
        opened = start_span(call.name, "tool_call", "tool_call", None,
                            {"arguments": call.arguments, "call_id": call.id, "early": True})
        try:  # no gate: a tool that requires approval never runs early (early_tool)
            context = call_context(call) if tool.hidden else None
            outcome = await GatedCall(tool, call, context, validated=True).arun()
        except BaseException as exc:
            close_span(opened, None, exc)
            raise
        if opened is not None:
            if outcome.error is not None:
                opened[0].error = outcome.error
            else:
                opened[0].attributes["result"] = outcome.value
        close_span(opened, None)
        return outcome


__all__ = ["EARLY", "ParallelCalls", "settle_early", "take_early"]

"""One call of a tool in a run, as the agent's ``FuncNode``, its early (parallel) calls and AoT's atoms all make it.

- its context (:func:`call_context`): what the tool's hidden parameters and ``RunContext`` receive: the active
  run's globals, trace id and deps, the call's id, and what the caller adds (the agent: its memory, inner runs);
- its gate (:func:`~llamabot.agents.approval.approval_gate`, taken by the caller): for a tool that requires
  approval, where the decision comes from;
- the call (:class:`GatedCall`): the decision taken (the approver asked when the gate has one; a rejection or
  invalid edited arguments give a not-run outcome: the tool never runs), then the tool called through the one
  tool-call logic (:func:`llamabot.tools.call.tool_call`: validation, retry policy, timeout) with the decision
  in its ``RunContext``.

The span is the caller's: ``FuncNode``'s graph step, the ``tool_call`` span an early call opens beside it
(:mod:`~llamabot.agents.parallel_calls`), or the ``tool_call`` span of kind ``atom`` an AoT atom opens inside its
layer.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Any

from llamabot.agents.agent_state import PendingCall
from llamabot.agents.approval import Decided, Gate, adecide_call, decide_call
from llamabot.models.exchange import arun_exchange, run_exchange
from llamabot.observe.tracing import active_run
from llamabot.tools.call import ToolOutcome, tool_call
from llamabot.tools.context import APPROVAL, CALL_ID, DEPS
from llamabot.tools.retry import Retry
from llamabot.tools.tool import Tool


def call_context(call: PendingCall, **extra: Any) -> dict[str, Any]:
    """The hidden-parameter context of ``call`` in the active run (ask for it only for a tool with hidden
    parameters): the run's ``globals_dict``, ``trace_id`` and deps, the call's id, and ``extra``."""
    active = active_run()
    run = active[0] if active is not None else None
    values = run.values if run is not None else {}
    return {"globals_dict": values.get("globals_dict", {}), "trace_id": run.trace.trace_id if run is not None else "",
            DEPS: values.get(DEPS), CALL_ID: call.id, **extra}


class GatedCall:
    """One call of ``tool`` with ``call``'s arguments: decided first when ``gate`` is given (see the module), then
    called; :meth:`run` in sync runs, ``await`` :meth:`arun` in async ones (an effect, made per call). Never
    raises for the tool's failures: the :class:`ToolOutcome` carries them. ``arguments``: what the tool is called
    with (the call's, or those an approver edited, once decided). ``validated``, ``retry``, ``executor``: as
    :func:`~llamabot.tools.call.tool_call`'s."""

    __slots__ = ("tool", "call", "arguments", "context", "gate", "validated", "retry", "executor")

    def __init__(self, tool: Tool, call: PendingCall, context: dict[str, Any] | None = None, gate: Gate | None = None,
                 *, validated: bool = False, retry: Retry | None = None, executor: Executor | None = None):
        self.tool, self.call, self.arguments, self.context, self.gate = tool, call, call.arguments, context, gate
        self.validated, self.retry, self.executor = validated, retry, executor

    def run(self) -> ToolOutcome:
        if self.gate is not None:
            refused = self._decided(decide_call(self.tool, self.call, self.gate))
            if refused is not None:
                return refused
        return run_exchange(tool_call(self.tool, self.arguments, self.context, validated=self.validated,
                                      retry=self.retry, executor=self.executor))

    async def arun(self) -> ToolOutcome:
        if self.gate is not None:
            refused = self._decided(await adecide_call(self.tool, self.call, self.gate))
            if refused is not None:
                return refused
        return await arun_exchange(tool_call(self.tool, self.arguments, self.context, validated=self.validated,
                                             retry=self.retry, executor=self.executor))

    def _decided(self, decided: Decided) -> ToolOutcome | None:
        """Take the decision: the outcome of a call that does not run, or ``None`` with the arguments and context
        to run it with."""
        arguments, decision = decided
        if isinstance(arguments, Exception):
            return _not_run(arguments)
        self.arguments = arguments
        if decision is not None and self.context is not None:
            self.context = {**self.context, APPROVAL: decision}
        return None


def _not_run(error: Exception) -> ToolOutcome:
    """The outcome of a call that did not run (rejected, or edited arguments that are invalid): ``error`` as the
    model sees it, no attempt."""
    return ToolOutcome(None, f"{type(error).__name__}: {error}", 0, 0.0, error)


__all__ = ["GatedCall", "call_context"]

"""Every request of a durable run is a DBOS step: model calls, tool attempts, waits, approvals.

:class:`DurableSteps` is the :class:`~llamabot.models.exchange.StepRunner` a durable run installs with
``using_steps``: the exchange drivers hand it every request of every exchange of the run (the agent's decisions
and tool calls, AoT's plan calls and atoms, ANoT's steps, ToT's model calls, one-turn bots inside a graph). It
runs each as a step through DBOS, which records the reply in the database; when a recovered run executes again,
DBOS returns the recorded reply of every step that had completed instead of running it, so a completed model call
is not sent again and a completed tool attempt is not repeated. A retry backoff (``Sleep``) is a durable sleep.

Before a tool with ``requires_approval`` runs, the run publishes a pending approval and waits durably for a
decision (see :mod:`llamabot.durable.approval`): approve (optionally with edited arguments, validated against the
tool's schema) or reject (the reason becomes the tool's error, shown to the model). A decision holds for every
attempt of that tool call.

The work of a step runs with steps turned off (``using_steps(None)``), so exchanges nested inside it (a tool that
calls a bot) are part of the step, not steps of their own. A tool marked ``runs_steps`` (an agent used as a tool)
is not a step: it runs in the workflow, and its own model calls, tool attempts and approvals are steps of the run
(a recovered run replays them; an approval inside it waits durably like any other). What ends the run (the
process stopping, a replay that no longer matches, a cancellation) ends it through such a tool too, instead of
becoming the tool's error. ``Durable`` runs are async workflows, so their
exchanges use the async drivers (``astep``); ``step`` serves exchanges driven synchronously in a sync workflow
(DBOS's sync API refuses to run on an event loop's thread).
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from typing import Any

from dbos import DBOS
from dbos import error as dbos_error

from llamabot.durable.approval import (
    APPROVAL_EVENT,
    APPROVAL_TOPIC,
    WAIT_S,
    Decision,
    decided_record,
    json_data,
    pending_record,
)
from llamabot.durable.drain import DRAIN, RunParked
from llamabot.durable.errors import BotFactoryError, NotStorableError, RunChangedError, ToolRejectedError
from llamabot.durable.serializer import SERIALIZER
from llamabot.errors import RUN_ENDING, ToolArgumentsError
from llamabot.models.base import ChatModel, TokenCallback
from llamabot.models.exchange import acarry_out, carry_out, using_steps
from llamabot.models.reply import ModelRequest
from llamabot.tools.call import Sleep, ToolAttempt
from llamabot.tools.tool import Tool


class DurableSteps:
    """The step runner of one durable run (one per workflow execution: it counts the run's approvals and
    remembers each tool call's decision for its retries)."""

    __slots__ = ("_approvals", "_decided", "_ended")

    def __init__(self) -> None:
        self._approvals = 0
        self._ended: BaseException | None = None  # what ended a step inside a tool that runs steps (see _inline)
        # id(attempt) -> (the attempt, kept alive so the id stays unique; what to run, or the rejection)
        self._decided: dict[int, tuple[ToolAttempt, ToolAttempt | tuple[None, Exception]]] = {}

    # -- the two drivers' entry points --------------------------------------------------------------------

    def step(self, request: Any, model: ChatModel | None, on_token: TokenCallback | None) -> Any:
        with self._ending():
            with DRAIN.step():  # a sync wait (sleep, approval) cannot be interrupted: it counts as a step in flight
                if type(request) is Sleep:
                    return DBOS.sleep(request.seconds)
                if type(request) is ToolAttempt:
                    check_inline(request.tool, request.timeout)
                    if request.tool.requires_approval:
                        decided = self._decided.get(id(request)) or self._decide(request, _wait(self._approval(request)))
                        if type(decided[1]) is not ToolAttempt:
                            return decided[1]
                        request = decided[1]
                if not (type(request) is ToolAttempt and request.tool.runs_steps):
                    return DBOS.run_step({"name": step_name(request, model)}, _run_plainly, request, model, on_token)
            return self._inline(carry_out(request, model, on_token))  # its own steps pass the drain

    async def astep(self, request: Any, model: ChatModel | None, on_token: TokenCallback | None) -> Any:
        with self._ending():
            if type(request) is Sleep:
                with DRAIN.wait():  # a stopping process parks the run now; the sleep's end time is recorded
                    return await DBOS.sleep_async(request.seconds)
            if type(request) is ToolAttempt:
                check_inline(request.tool, request.timeout)
                if request.tool.requires_approval:
                    decided = self._decided.get(id(request)) or self._decide(request, await _await(self._approval(request)))
                    if type(decided[1]) is not ToolAttempt:
                        return decided[1]
                    request = decided[1]
                if request.tool.runs_steps:
                    return self._inline(await acarry_out(request, model, on_token))
            # A sync tool: DBOS runs a sync step in one worker thread (check the record, call the tool, write the
            # result), where an async step would hop to a thread for each of the three.
            plain = type(request) is ToolAttempt and not request.tool.is_async and request.tool.afunc is None
            with DRAIN.step():  # a stopping process lets this step finish and be recorded, and starts no other
                return await DBOS.run_step_async({"name": step_name(request, model)}, _run_plainly if plain else
                                                 _arun_plainly, request, model, on_token)

    # -- tools that run steps ------------------------------------------------------------------------------

    def _inline(self, outcome: Any) -> Any:
        """The outcome of a tool that ran steps; what ended one of its steps ends the run here (the tool's own
        error handling turned it into the tool's error), at every level of nesting."""
        if self._ended is not None:
            raise self._ended
        return outcome

    @contextlib.contextmanager
    def _ending(self) -> Generator[None, None, None]:
        """Keep what ends the run from a step (see :func:`_ends_run`), for :meth:`_inline`; DBOS's replay check
        becomes :class:`RunChangedError`."""
        try:
            yield
        except dbos_error.DBOSUnexpectedStepError as exc:  # its inputs: (run id, step, expected now, recorded)
            self._ended = RunChangedError(*exc.inputs)
            raise self._ended from None
        except BaseException as exc:
            if _ends_run(exc):
                self._ended = exc
            raise

    # -- approvals ------------------------------------------------------------------------------------------

    def _pending(self, attempt: ToolAttempt) -> tuple[int, dict[str, Any]] | tuple[int, Exception]:
        """The next approval number and its pending record, or the error when the arguments cannot be shown."""
        self._approvals += 1
        tool = attempt.tool
        visible = {k: v for k, v in attempt.kwargs.items() if k not in tool.hidden}
        try:
            arguments = json_data(visible, f"the arguments of tool {tool.name!r}")
        except NotStorableError as exc:
            return self._approvals, exc
        return self._approvals, pending_record(self._approvals, tool.name, arguments)

    def _approval(self, attempt: ToolAttempt) -> Generator[tuple[str, tuple[Any, ...]], Any, Decision | Exception]:
        """The approval of one tool call, written once as an exchange of DBOS calls ``(name, args)`` that
        :func:`_wait` makes synchronously and :func:`_await` with DBOS's ``*_async`` twins: publish the pending
        record, wait durably for the decision on it, publish that it was decided."""
        number, record = self._pending(attempt)
        if isinstance(record, Exception):
            return record
        yield "set_event", (APPROVAL_EVENT, record)
        while True:  # a wait that timed out, or a stale decision for an earlier approval: wait again
            decision = Decision.from_message((yield "recv", (APPROVAL_TOPIC, WAIT_S)))
            if decision is not None and decision.request == number:
                break
        yield "set_event", (APPROVAL_EVENT, decided_record(number, attempt.tool.name, decision))
        return decision

    def _decide(self, attempt: ToolAttempt, decision: Decision | Exception) -> tuple[ToolAttempt, Any]:
        """What the decision means for this tool call, remembered for its later attempts."""
        tool = attempt.tool
        if isinstance(decision, Exception):
            outcome: ToolAttempt | tuple[None, Exception] = (None, decision)
        elif decision.verdict == "reject":
            outcome = (None, ToolRejectedError(tool.name, decision.reason))
        elif decision.arguments is None:
            outcome = attempt
        else:
            hidden = {k: v for k, v in attempt.kwargs.items() if k in tool.hidden}
            try:
                kwargs = {**tool.validate(decision.arguments), **hidden}
                outcome = ToolAttempt(tool, kwargs, attempt.timeout, attempt.executor)
            except ToolArgumentsError as exc:  # the edited arguments are wrong: the model is shown why
                outcome = (None, exc)
        self._decided[id(attempt)] = (attempt, outcome)
        return self._decided[id(attempt)]


def check_inline(tool: Tool, timeout: float | None) -> None:
    """A tool that runs steps cannot have a timeout in a durable run (:class:`BotFactoryError`)."""
    if tool.runs_steps and timeout is not None:
        raise BotFactoryError(
            f"tool {tool.name!r} has a timeout ({timeout} s): in a durable run, an agent used as a "
            "tool runs its model and tool calls as steps of the run, and one timeout over all of them would not "
            "replay the same way; set timeouts on the inner bot's tools instead"
        )


def _ends_run(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a step, ends the run rather than being a recorded outcome: the process stopping
    (``RunParked``), a cancellation or interrupt, the replay check, DBOS's own errors."""
    return isinstance(exc, (RunParked, RunChangedError, *RUN_ENDING, dbos_error.DBOSException,
                            dbos_error.DBOSBaseException))


def _wait(approval: Generator[tuple[str, tuple[Any, ...]], Any, Any]) -> Any:
    """Drive an approval exchange with DBOS's sync calls."""
    try:
        name, args = next(approval)
        while True:
            name, args = approval.send(getattr(DBOS, name)(*args))
    except StopIteration as stop:
        return stop.value


async def _await(approval: Generator[tuple[str, tuple[Any, ...]], Any, Any]) -> Any:
    """Drive an approval exchange with DBOS's async calls (``set_event_async``, ``recv_async``)."""
    try:
        name, args = next(approval)
        while True:
            with DRAIN.wait() if name == "recv" else contextlib.nullcontext():  # a stopping process parks the run
                reply = await getattr(DBOS, f"{name}_async")(*args)
            name, args = approval.send(reply)
    except StopIteration as stop:
        return stop.value


def current_step() -> tuple[str, int] | None:
    """``(run id, step number)`` of the durable step running now (a tool called by a durable run), else ``None``.

    A step runs at least once: a process killed after a tool's side effect and before the step's result was
    recorded runs the attempt again when the run is recovered. The pair is the same for both executions, so a tool
    whose effect must happen once keys it by them (an idempotency key for a payment API, a unique row)."""
    run_id, number = DBOS.workflow_id, DBOS.step_id
    return None if run_id is None or number is None else (run_id, number)


def step_name(request: Any, model: ChatModel | None) -> str:
    """The name a step is recorded under: ``model:<model name>``, ``tool:<tool name>``, or the effect's type."""
    if type(request) is ModelRequest:
        return f"model:{getattr(model, 'name', '?')}"
    if type(request) is ToolAttempt:
        return f"tool:{request.tool.name}"
    return type(request).__name__


def _run_plainly(request: Any, model: ChatModel | None, on_token: TokenCallback | None) -> Any:
    with using_steps(None):
        return storable(request, carry_out(request, model, on_token))


async def _arun_plainly(request: Any, model: ChatModel | None, on_token: TokenCallback | None) -> Any:
    with using_steps(None):
        return storable(request, await acarry_out(request, model, on_token))


def storable(request: Any, reply: Any) -> Any:
    """The reply, made storable: DBOS stores it as JSON (:mod:`llamabot.durable.serializer`), and a recovered run
    reads it back. A model reply that cannot be stored fails the step with :class:`NotStorableError`; a tool
    attempt's value that cannot becomes an error outcome naming the tool (shown to the model). An exception whose
    class cannot be restored is stored as a ``RuntimeError`` with the same text, so the run sees now what a
    recovered run would."""
    if type(request) is not ToolAttempt:
        if type(request) is ModelRequest:
            SERIALIZER.encode(reply, f"the reply of model {request.model!r}")  # fails here, not in DBOS
        return reply
    value, error = reply
    try:
        SERIALIZER.round_trip(value, f"the result of tool {request.tool.name!r}")
    except NotStorableError as exc:
        return None, NotStorableError(
            f"{exc}; return plain data (str, numbers, lists, dicts, llamabot's dataclasses and models) or list "
            "its class in the bot's state_classes"
        )
    if error is not None:
        restored = SERIALIZER.round_trip(error, f"the error of tool {request.tool.name!r}")
        return value, error if type(restored) is type(error) else restored
    return reply

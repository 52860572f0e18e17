"""Calling a tool: one logic, written once as an exchange, driven sync or async like a model call.

:func:`tool_call` validates the arguments (or takes already-validated ones), injects the hidden parameters from
the run context, then yields one :class:`ToolAttempt` per attempt and a :class:`Sleep` before each retry, and
returns a :class:`ToolOutcome`. It never raises for the tool's own failures: invalid arguments, an exception in
the tool, a timeout and an async tool in a sync run all become ``ToolOutcome.error`` (``"TypeName: message"``,
the text the model is shown), with the exception kept on ``ToolOutcome.exception``. So does whatever else a tool
raises (``SystemExit`` from argparse, ``GeneratorExit``, ``StopIteration``), kept in a :class:`ToolCrashedError`:
one call's failure never ends another run or the process. What ends the run instead: the run's cancellation and
``KeyboardInterrupt`` (:data:`RUN_ENDING`), and :class:`ToolUnavailableError` (what the tool stands on is gone,
e.g. its MCP server exited).

Every attempt contains the tool's exceptions where the tool runs: in this frame, in the worker thread (the thread
hands back ``(value, error)``, so a ``StopIteration`` never has to cross a future, which cannot carry one), or in
the coroutine wrapped around a coroutine tool (a task of its own with a timeout, which would re-raise a
``SystemExit`` out of the event loop).

The drivers of :mod:`llamabot.models.exchange` carry the effects out: ``run_exchange`` calls ``run()`` (the tool
in this thread, or in a daemon worker thread when it has a timeout; ``time.sleep`` between attempts),
``arun_exchange`` awaits ``arun()`` (coroutine tools on the loop; sync tools in worker threads, so a blocking
tool never stalls the other runs of the loop; ``asyncio.sleep`` between attempts). ``invoke_tool``/``ainvoke_tool``,
the agent's tool node, AoT atoms and compensations all call tools through here.

A timed-out sync tool cannot be stopped (Python has no way to kill a thread): it runs on in its daemon thread
and its result is dropped. A timed-out coroutine tool is cancelled.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
import time
from collections.abc import Callable, Mapping
from concurrent import futures
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from llamabot.errors import (
    RUN_ENDING,
    ToolArgumentsError,
    ToolDefinitionError,
    ToolResultError,
    ToolUnavailableError,
    tool_failure,
)
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.models.messages import tool_result_text
from llamabot.observe.tracing import log_debug
from llamabot.tools.retry import Retry
from llamabot.tools.tool import Tool, as_tool

#: Worker threads for sync tools in async runs (created on demand): wide, because tools mostly wait on I/O.
TOOL_THREADS = 32

#: What passes through an attempt instead of failing the call.
_PASSED_ON = (*RUN_ENDING, ToolUnavailableError)

#: What one attempt gives back: ``(value, None)`` or ``(None, the exception that ended it)``.
Attempted = tuple[Any, "Exception | None"]


@dataclass(slots=True)
class ToolOutcome:
    """The result of calling a tool: ``value``, or ``error`` as the model sees it (``"TypeName: message"``).

    ``attempts`` is how many times the function ran (0: the arguments were invalid); ``duration_s`` covers
    validation, every attempt and the waits between them. ``exception`` is what ended the call, for callers
    that re-raise it. ``text``: what the model is shown of the value, once :func:`shown` made it. Two outcomes are
    equal when value, error and attempts are.
    """

    value: Any = None
    error: str | None = None
    attempts: int = 0
    duration_s: float = field(default=0.0, compare=False)
    exception: Exception | None = field(default=None, repr=False, compare=False)
    text: str | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self) -> Any:
        """The value; or raise the exception that ended the call."""
        if self.exception is not None:
            raise self.exception
        return self.value


class ToolAttempt:
    """Effect: run ``tool.func(**kwargs)`` once, within ``timeout`` seconds if one is set.

    ``executor`` runs sync tools in async runs when there is no timeout (default: a shared pool of
    :data:`TOOL_THREADS` threads); with a timeout, a daemon thread per attempt (so a hung tool never blocks the
    interpreter's exit). Returns :data:`Attempted`; exceptions of the tool are returned, not raised.
    Carried out by :func:`attempt` / :func:`aattempt`.
    """

    __slots__ = ("tool", "kwargs", "timeout", "executor")

    def __init__(self, tool: Tool, kwargs: dict[str, Any], timeout: float | None = None,
                 executor: Executor | None = None):
        self.tool, self.kwargs, self.timeout, self.executor = tool, kwargs, timeout, executor

    def __repr__(self) -> str:
        return f"ToolAttempt(tool={self.tool.name!r}, kwargs={self.kwargs!r}, timeout={self.timeout!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not ToolAttempt:
            return NotImplemented
        return (self.tool, self.kwargs, self.timeout, self.executor) == (
            other.tool, other.kwargs, other.timeout, other.executor)

    __hash__ = None  # type: ignore[assignment]  # kwargs is a dict

    def run(self) -> Attempted:
        return attempt(self.tool, self.kwargs, self.timeout)

    async def arun(self) -> Attempted:
        return await aattempt(self.tool, self.kwargs, self.timeout, self.executor)


def attempt(tool: Tool, kwargs: dict[str, Any], timeout: float | None = None) -> Attempted:
    """Run ``tool.func(**kwargs)`` once in this thread (in a daemon worker thread within ``timeout`` seconds when
    one is set): what :meth:`ToolAttempt.run` carries out. Exceptions of the tool are returned, not raised."""
    if tool.is_async:
        return None, _async_in_sync_run(tool)
    if timeout is None:
        value, error = _called(tool, kwargs)
    else:
        future = _daemon_thread(functools.partial(_called, tool, kwargs), tool.name)
        if not futures.wait((future,), timeout=timeout).done:
            return None, _timed_out(tool, timeout)
        value, error = future.result()
    if error is None and inspect.isawaitable(value):  # from a sync function
        getattr(value, "close", lambda: None)()  # close it: no "coroutine was never awaited" warning
        return None, _async_in_sync_run(tool)
    return value, error


async def aattempt(tool: Tool, kwargs: dict[str, Any], timeout: float | None = None,
                   executor: Executor | None = None) -> Attempted:
    """Async twin of :func:`attempt` (what :meth:`ToolAttempt.arun` carries out): coroutine tools awaited on the
    loop, sync tools in a worker thread (``executor``, default the shared pool) unless they neither block nor
    have a timeout."""
    if timeout is None and _at_once(tool):
        value, error = _called(tool, kwargs)
        if error is None and inspect.isawaitable(value):
            return await _awaited(value, tool)
        return value, error
    try:
        if tool.is_async or tool.afunc is not None:  # a coroutine function, or a coroutine twin (an MCP tool)
            coroutine = (tool.func if tool.is_async else tool.afunc)(**kwargs)
            value, error = await _within(_awaited(coroutine, tool), timeout, tool)
        else:
            value, error = await _within(_threaded(tool, kwargs, timeout, executor), timeout, tool)
        if error is None and inspect.isawaitable(value):  # a sync function's
            value, error = await _awaited(value, tool)
    except _PASSED_ON:
        raise
    except BaseException as exc:  # noqa: BLE001 - the coroutine function's own call failed (e.g. a TypeError)
        return None, tool_failure(tool.name, exc)
    return value, error


def _at_once(tool: Tool) -> bool:
    """Whether ``tool`` is a sync function that returns at once (``blocking=False``): async runs call it on the
    event loop, without a worker thread."""
    return not tool.blocking and not tool.is_async and tool.afunc is None


def _called(tool: Tool, kwargs: dict[str, Any]) -> Attempted:
    """Call a sync tool here, once (in this thread, or as what a worker thread runs); whatever it raises but
    :data:`_PASSED_ON` is returned, not raised (the value may be an awaitable)."""
    try:
        return tool.func(**kwargs), None
    except _PASSED_ON:
        raise
    except BaseException as exc:  # noqa: BLE001 - the outcome carries it (SystemExit, GeneratorExit... included)
        return None, tool_failure(tool.name, exc)


async def _awaited(awaitable: Any, tool: Tool) -> Attempted:
    """Await a coroutine tool's coroutine (or what a sync tool returned); whatever it raises but
    :data:`_PASSED_ON` is returned, not raised. When the run's coroutine is being closed, the ``GeneratorExit``
    returned here is raised again in every frame that awaits this one: closing still works."""
    try:
        return await awaitable, None
    except _PASSED_ON:
        raise
    except BaseException as exc:  # noqa: BLE001 - the outcome carries it
        return None, tool_failure(tool.name, exc)


def _threaded(tool: Tool, kwargs: dict[str, Any], timeout: float | None, executor: Executor | None) -> Any:
    """A future of :func:`_called` run in a worker thread: its result is the attempt's ``(value, error)``."""
    call = functools.partial(_called, tool, kwargs)
    if timeout is not None:
        return asyncio.wrap_future(_daemon_thread(call, tool.name))
    context = contextvars.copy_context()  # the tool sees the caller's context (the active trace span...)
    return asyncio.get_running_loop().run_in_executor(executor or _tool_threads(), context.run, call)


@dataclass(frozen=True, slots=True)
class Sleep:
    """Effect: wait ``seconds`` (``time.sleep`` in sync runs, ``asyncio.sleep`` in async runs)."""

    seconds: float

    def run(self) -> None:
        time.sleep(self.seconds)

    async def arun(self) -> None:
        await asyncio.sleep(self.seconds)


def tool_call(
    tool: Tool | Callable[..., Any],
    arguments: str | Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    *,
    validated: bool = False,
    retry: Retry | None = None,
    timeout: float | None = None,
    executor: Executor | None = None,
) -> Exchange[ToolOutcome]:
    """The exchange that calls ``tool`` (a :class:`Tool` or a ``@tool`` function) and returns its outcome.

    ``arguments``: the model's arguments (JSON text or a dict), validated against the tool's schema; with
    ``validated=True``, keyword arguments already validated (they are only completed with the hidden ones).
    ``context``: the run context the hidden parameters come from (``_name`` <- ``context["name"]``).
    ``retry``/``timeout``: override the tool's own policy (``@tool(retries=..., timeout=...)``).
    ``executor``: where sync tools run in async runs (see :class:`ToolAttempt`).
    """
    started = time.perf_counter()
    tool = tool if type(tool) is Tool else as_tool(tool)
    try:
        kwargs = _kwargs(tool, arguments, context, validated)
    except (ToolArgumentsError, ToolDefinitionError) as exc:
        return _outcome(None, exc, 0, started)
    attempt = ToolAttempt(tool, kwargs, tool.timeout if timeout is None else timeout, executor)
    policy = tool.retry if retry is None else retry
    state = policy.begin() if policy is not None else None
    attempts = 0
    while True:
        attempts += 1
        value, error = yield attempt
        if error is None or state is None or isinstance(error, ToolDefinitionError):
            return _outcome(value, error, attempts, started)
        wait = state.after(error)
        if wait is None:
            log_debug("tool {} gave up after {} attempts: {!r}", tool.name, attempts, error)
            return _outcome(None, error, attempts, started)
        log_debug("tool {} attempt {} failed ({!r}); retrying in {:.3f} s", tool.name, attempts, error, wait)
        if wait > 0:
            yield Sleep(wait)


def invoke_tool(tool: Tool | Callable[..., Any], arguments: str | Mapping[str, Any] | None = None,
                context: Mapping[str, Any] | None = None, **options: Any) -> ToolOutcome:
    """Call ``tool`` synchronously: :func:`tool_call` driven by ``run_exchange`` (``options`` are its
    ``validated``, ``retry``, ``timeout``). An async tool gives an error outcome."""
    return run_exchange(tool_call(tool, arguments, context, **options))


async def ainvoke_tool(tool: Tool | Callable[..., Any], arguments: str | Mapping[str, Any] | None = None,
                       context: Mapping[str, Any] | None = None, **options: Any) -> ToolOutcome:
    """Call ``tool`` from async code: :func:`tool_call` driven by ``arun_exchange`` (``options`` as
    :func:`tool_call`'s, ``executor`` included): coroutine tools are awaited, sync tools run in a worker thread."""
    return await arun_exchange(tool_call(tool, arguments, context, **options))


def shown(outcome: ToolOutcome, tool: str) -> ToolOutcome:
    """``outcome`` of tool ``tool`` with ``text`` set to what the model is shown of its value (cut to the tool-result
    limit: see :func:`llamabot.models.messages.tool_result_text`); ``value`` stays whole for the caller. A value
    that cannot be shown at all makes a failed outcome (:class:`ToolResultError`). Failed outcomes pass as they
    are."""
    if outcome.error is not None:
        return outcome
    try:
        outcome.text = tool_result_text(outcome.value, tool)
    except ToolResultError as exc:
        return ToolOutcome(None, f"{type(exc).__name__}: {exc}", outcome.attempts, outcome.duration_s, exc)
    return outcome


def _kwargs(tool: Tool, arguments: Any, context: Mapping[str, Any] | None, validated: bool) -> dict[str, Any]:
    """The keyword arguments of a call: validated ones completed with the hidden parameters, or the model's
    arguments validated and completed."""
    return tool.inject(arguments or {}, context) if validated else tool.bind(arguments, context)


def _outcome(value: Any, error: Exception | None, attempts: int, started: float) -> ToolOutcome:
    duration = time.perf_counter() - started
    if error is None:
        return ToolOutcome(value, None, attempts, duration)
    return ToolOutcome(None, f"{type(error).__name__}: {_message(error)}", attempts, duration, error)


def _message(error: Exception) -> str:
    """``str(error)``; a placeholder when the exception's own ``__str__`` fails."""
    try:
        return str(error)
    except _PASSED_ON:
        raise
    except BaseException:  # noqa: BLE001 - the call failed either way; say so
        return "(its message cannot be shown: its __str__ failed)"


def _async_in_sync_run(tool: Tool) -> ToolDefinitionError:
    return ToolDefinitionError(
        f"tool {tool.name!r} is async; call it with `await ainvoke_tool(tool, ...)` or from an async bot "
        "(AsyncAgentBot.arun, aexecute_plan)"
    )


def _timed_out(tool: Tool, timeout: float) -> TimeoutError:
    return TimeoutError(f"tool {tool.name!r} did not finish within {timeout} s")


async def _within(awaitable: Any, timeout: float | None, tool: Tool) -> Any:
    """Await ``awaitable``, cancelling it after ``timeout`` seconds. Unlike ``asyncio.wait_for``, a
    ``TimeoutError`` raised by the tool itself stays the tool's own error."""
    if timeout is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        raise _timed_out(tool, timeout)
    return task.result()


def _daemon_thread(call: Callable[[], Any], name: str) -> futures.Future[Any]:
    """Run ``call`` in a new daemon thread, in a copy of the caller's context; its future."""
    future: futures.Future[Any] = futures.Future()
    context = contextvars.copy_context()

    def target() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(context.run(call))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                future.set_exception(exc)

    threading.Thread(target=target, name=f"llamabot-tool-{name}", daemon=True).start()
    return future


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _tool_threads() -> ThreadPoolExecutor:
    """The shared pool for sync tools in async runs (the loop's default executor has only cores + 4 threads,
    too few for ten concurrent runs of a blocking tool on a small machine)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=TOOL_THREADS, thread_name_prefix="llamabot-tool")
    return _pool

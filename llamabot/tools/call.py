"""Calling a tool: one logic, written once as an exchange, driven sync or async like a model call.

:func:`tool_call` validates the arguments (or takes already-validated ones), injects the hidden parameters from
the run context, then yields one :class:`ToolAttempt` per attempt and a :class:`Sleep` before each retry, and
returns a :class:`ToolOutcome`. It never raises for the tool's own failures: invalid arguments, an exception in
the tool, a timeout and an async tool in a sync run all become ``ToolOutcome.error`` (``"TypeName: message"``,
the text the model is shown), with the exception kept on ``ToolOutcome.exception``. The one exception is
:class:`ToolUnavailableError` (what the tool stands on is gone, e.g. its MCP server exited): it ends the run.

The drivers of :mod:`llamabot.models.exchange` carry the effects out: ``run_exchange`` calls ``run()`` (the tool
in this thread, or in a daemon worker thread when it has a timeout; ``time.sleep`` between attempts),
``arun_exchange`` awaits ``arun()`` (coroutine tools on the loop; sync tools in worker threads, so a blocking
tool never stalls the other runs of the loop; ``asyncio.sleep`` between attempts). ``Tool.invoke``/``ainvoke``,
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

from llamabot.errors import ToolArgumentsError, ToolDefinitionError, ToolUnavailableError
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange, step_runner
from llamabot.observe.tracing import log_debug
from llamabot.tools.retry import Retry
from llamabot.tools.tool import Tool, as_tool

#: Worker threads for sync tools in async runs (created on demand): wide, because tools mostly wait on I/O.
TOOL_THREADS = 32

#: Result types that are never awaitable (skips the awaitable check for the usual tool results).
_PLAIN = frozenset({str, int, float, bool, type(None), dict, list, tuple})

#: What one attempt gives back: ``(value, None)`` or ``(None, the exception that ended it)``.
Attempted = tuple[Any, "Exception | None"]


@dataclass(slots=True)
class ToolOutcome:
    """The result of calling a tool: ``value``, or ``error`` as the model sees it (``"TypeName: message"``).

    ``attempts`` is how many times the function ran (0: the arguments were invalid); ``duration_s`` covers
    validation, every attempt and the waits between them. ``exception`` is what ended the call, for callers
    that re-raise it. Two outcomes are equal when value, error and attempts are.
    """

    value: Any = None
    error: str | None = None
    attempts: int = 0
    duration_s: float = field(default=0.0, compare=False)
    exception: Exception | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self) -> Any:
        """The value; or raise the exception that ended the call (what ``Tool.invoke`` does)."""
        if self.exception is not None:
            raise self.exception
        return self.value


class ToolAttempt:
    """Effect: run ``tool.func(**kwargs)`` once, within ``timeout`` seconds if one is set.

    ``executor`` runs sync tools in async runs when there is no timeout (default: a shared pool of
    :data:`TOOL_THREADS` threads); with a timeout, a daemon thread per attempt (so a hung tool never blocks the
    interpreter's exit). Returns :data:`Attempted`; exceptions of the tool are returned, not raised.
    Carried out by :func:`attempt` / :func:`aattempt`, which the one-attempt paths call directly.
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
    try:
        if timeout is None:
            value = tool.func(**kwargs)
        else:
            future = _daemon_thread(functools.partial(tool.func, **kwargs), tool.name)
            if not futures.wait((future,), timeout=timeout).done:
                return None, _timed_out(tool, timeout)
            value = future.result()
    except ToolUnavailableError:  # the tool's server is gone: the run ends, nothing to show the model
        raise
    except Exception as exc:  # noqa: BLE001 - the outcome carries it
        return None, exc
    if type(value) not in _PLAIN and inspect.isawaitable(value):  # a coroutine from a sync function
        getattr(value, "close", lambda: None)()  # close it: no "coroutine was never awaited" warning
        return None, _async_in_sync_run(tool)
    return value, None


async def aattempt(tool: Tool, kwargs: dict[str, Any], timeout: float | None = None,
                   executor: Executor | None = None) -> Attempted:
    """Async twin of :func:`attempt` (what :meth:`ToolAttempt.arun` carries out): coroutine tools awaited on the
    loop, sync tools in a worker thread (``executor``, default the shared pool) unless they neither block nor
    have a timeout."""
    if timeout is None and _at_once(tool):
        value, error = _called(tool, kwargs)
        return await _awaited(value) if type(value) not in _PLAIN and inspect.isawaitable(value) else (value, error)
    try:
        if tool.is_async:
            value = await _within(tool.func(**kwargs), timeout, tool)
        elif tool.afunc is not None:  # a coroutine twin (an MCP tool): awaited here
            value = await _within(tool.afunc(**kwargs), timeout, tool)
        else:
            value = await _within(_threaded(tool, kwargs, timeout, executor), timeout, tool)
        if type(value) not in _PLAIN and inspect.isawaitable(value):  # a sync function that returned one
            value = await value
    except ToolUnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - the outcome carries it
        return None, exc
    return value, None


def _at_once(tool: Tool) -> bool:
    """Whether ``tool`` is a sync function that returns at once (``blocking=False``): async runs call it on the
    event loop, without a worker thread."""
    return not tool.blocking and not tool.is_async and tool.afunc is None


def _called(tool: Tool, kwargs: dict[str, Any]) -> Attempted:
    """Call a sync tool here, once; its exception is returned, not raised (the value may be an awaitable)."""
    try:
        return tool.func(**kwargs), None
    except ToolUnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - the outcome carries it
        return None, exc


async def _awaited(awaitable: Any) -> Attempted:
    """Await what a sync tool returned (a sync function may return a coroutine); its exception is returned."""
    try:
        return await awaitable, None
    except ToolUnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - the outcome carries it
        return None, exc


def _threaded(tool: Tool, kwargs: dict[str, Any], timeout: float | None, executor: Executor | None) -> Any:
    call = functools.partial(tool.func, **kwargs)
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
    """Call ``tool`` synchronously; ``options`` are :func:`tool_call`'s (``validated``, ``retry``, ``timeout``).
    An async tool gives an error outcome."""
    if _single_attempt(tool, options):
        started, kwargs = _direct_kwargs(tool, arguments, context, options.get("validated", False))  # type: ignore[arg-type]
        if type(kwargs) is ToolOutcome:  # invalid arguments: the function never runs
            return kwargs
        value, error = attempt(tool, kwargs)  # type: ignore[arg-type]
        return _outcome(value, error, 1, started)
    return run_exchange(tool_call(tool, arguments, context, **options))


async def ainvoke_tool(tool: Tool | Callable[..., Any], arguments: str | Mapping[str, Any] | None = None,
                       context: Mapping[str, Any] | None = None, **options: Any) -> ToolOutcome:
    """Call ``tool`` from async code (``options`` as :func:`tool_call`'s, ``executor`` included): coroutine tools
    are awaited, sync tools run in a worker thread."""
    if _single_attempt(tool, options):
        started, kwargs = _direct_kwargs(tool, arguments, context, options.get("validated", False))  # type: ignore[arg-type]
        if type(kwargs) is ToolOutcome:
            return kwargs
        value, error = await aattempt(tool, kwargs)  # type: ignore[arg-type]
        return _outcome(value, error, 1, started)
    return await arun_exchange(tool_call(tool, arguments, context, **options))


def invoke_validated(tool: Tool, kwargs: dict[str, Any], context: Mapping[str, Any] | None = None) -> ToolOutcome:
    """``invoke_tool(tool, kwargs, context, validated=True)`` for a :class:`Tool` whose arguments are already
    validated (the agent's tool node: its decision validated them), with no options to look at: the same
    outcome, on the shortest path when the call is one attempt."""
    if tool.retry is None and tool.timeout is None and step_runner() is None:
        started, kwargs = _direct_kwargs(tool, kwargs, context, True) if tool.hidden else (time.perf_counter(), kwargs)
        if type(kwargs) is ToolOutcome:
            return kwargs
        value, error = attempt(tool, kwargs)
        return _outcome(value, error, 1, started)
    return run_exchange(tool_call(tool, kwargs, context, validated=True))


async def ainvoke_validated(tool: Tool, kwargs: dict[str, Any],
                            context: Mapping[str, Any] | None = None) -> ToolOutcome:
    """Async twin of :func:`invoke_validated`."""
    if tool.retry is None and tool.timeout is None and step_runner() is None:
        started, kwargs = _direct_kwargs(tool, kwargs, context, True) if tool.hidden else (time.perf_counter(), kwargs)
        if type(kwargs) is ToolOutcome:
            return kwargs
        if _at_once(tool):  # what aattempt does for it, without a coroutine of its own (on every step of a run)
            value, error = _called(tool, kwargs)
            if type(value) not in _PLAIN and inspect.isawaitable(value):
                value, error = await _awaited(value)
        else:
            value, error = await aattempt(tool, kwargs)
        return _outcome(value, error, 1, started)
    return await arun_exchange(tool_call(tool, kwargs, context, validated=True))


def _single_attempt(tool: Any, options: Mapping[str, Any]) -> bool:
    """Whether calling ``tool`` is exactly one attempt that the caller may carry out itself, as the exchange's
    driver would: a :class:`Tool` without retry or timeout (its own or given), no executor given, and not a step
    of a durable run (whose runner must record it). Such calls skip the exchange's generator and driver."""
    return (type(tool) is Tool and tool.retry is None and tool.timeout is None
            and (not options or options.keys() == {"validated"}) and step_runner() is None)


def _direct_kwargs(tool: Tool, arguments: Any, context: Mapping[str, Any] | None,
                   validated: bool) -> tuple[float, dict[str, Any] | ToolOutcome]:
    """(start time, the keyword arguments of the one attempt), or the error outcome of arguments that are
    invalid."""
    started = time.perf_counter()
    if tool.hidden or not validated:
        try:
            arguments = _kwargs(tool, arguments, context, validated)
        except (ToolArgumentsError, ToolDefinitionError) as exc:
            return started, _outcome(None, exc, 0, started)
    return started, arguments or {}  # validated, no hidden parameter: the arguments as they are


def _kwargs(tool: Tool, arguments: Any, context: Mapping[str, Any] | None, validated: bool) -> dict[str, Any]:
    """The keyword arguments of a call: validated ones completed with the hidden parameters, or the model's
    arguments validated and completed."""
    return tool.inject(arguments or {}, context) if validated else tool.bind(arguments, context)


def _outcome(value: Any, error: Exception | None, attempts: int, started: float) -> ToolOutcome:
    duration = time.perf_counter() - started
    if error is None:
        return ToolOutcome(value, None, attempts, duration)
    return ToolOutcome(None, f"{type(error).__name__}: {error}", attempts, duration, error)


def _async_in_sync_run(tool: Tool) -> ToolDefinitionError:
    return ToolDefinitionError(
        f"tool {tool.name!r} is async; call it with `await tool.ainvoke(...)` or from an async bot "
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

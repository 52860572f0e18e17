"""One MCP server session, owned by an event loop in a background thread.

The ``mcp`` package's client is async and its session belongs to the task that opened it. A bot may be sync (a
notebook) or async (a service), so the session lives in a thread of its own: one task there opens it
(``mcp.Client``: the subprocess or the HTTP connection, the handshake, the tool listing) and holds it open until
:meth:`MCPConnection.close`. A call is one coroutine, :func:`_call`, submitted to that loop: sync callers wait on
its future, async callers await it (``asyncio.wrap_future``), so both share every line.

A server that cannot be used (it did not start, exited, closed the connection, or the connection was closed
here) raises :class:`MCPServerError` naming it; an error the server sends back raises :class:`MCPToolError`,
shown to the model, and so does a call the server does not answer within the call timeout
(:class:`MCPTimeoutError`; the request is cancelled). Closing stops the server process and its whole process
group (:mod:`llamabot.tools.mcp.stdio`); a ``weakref.finalize`` does the same when the connection is collected or
the interpreter exits, so no server outlives its user.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

from llamabot.errors import MCPServerError
from llamabot.observe.tracing import log_debug
from llamabot.tools.mcp.limits import MCPLimits, MCPTimeoutError
from llamabot.tools.mcp.results import MCPToolError
from llamabot.tools.mcp.server import MCPServerSpec

#: Seconds the server may take to start and answer the handshake and the tool listing.
CONNECT_TIMEOUT = 30.0
#: Seconds closing waits for the transport's own shutdown (stdio: 2 s after stdin closes, then SIGTERM, SIGKILL).
CLOSE_TIMEOUT = 10.0
#: Pages of a paginated tool listing read at most.
MAX_LIST_PAGES = 100


@dataclass
class _Session:
    """What the serving task and the callers share (never the connection itself, so that it can be collected)."""

    closing: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set when the serving task is over (the transport has stopped the server).
    done: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task[None] | None = None
    client: Any = None
    ended: str | None = None  # why the session is over, once it is
    limits: MCPLimits = field(default_factory=MCPLimits)

    def stop(self) -> None:
        """On the loop: end the session; a session still opening is cancelled (the transport still stops the
        process it started)."""
        self.closing.set()
        if self.client is None and self.task is not None:
            self.task.cancel()


class MCPConnection:
    """An open session with the MCP server ``spec``; ``listing`` holds the server's tools (``mcp.types.Tool``).
    ``limits``: the call timeout and the largest message (:class:`MCPLimits`).

    Raises :class:`MCPServerError` when the server does not start or does not answer within ``connect_timeout``
    seconds (nothing is left running then).
    """

    def __init__(
        self, spec: MCPServerSpec, *, connect_timeout: float = CONNECT_TIMEOUT, limits: MCPLimits | None = None
    ):
        self.spec = spec
        self._session = _Session(limits=limits or MCPLimits())
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"llamabot-mcp {spec.label[:40]}", daemon=True
        )
        self._thread.start()
        opened: futures.Future[list[Any]] = futures.Future()
        asyncio.run_coroutine_threadsafe(_serve(spec, self._session, opened), self._loop)
        self._finalizer = weakref.finalize(self, _shut_down, self._loop, self._thread, self._session)
        try:
            self.listing: list[Any] = opened.result(timeout=connect_timeout)
        except futures.TimeoutError:
            self.close()
            raise MCPServerError(
                spec.label, f"did not answer the MCP handshake within {connect_timeout} s"
            ) from None
        except BaseException:
            self.close()
            raise

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call tool ``name`` and wait for its ``CallToolResult`` (sync callers)."""
        return self._submit(name, arguments).result()

    async def acall(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call tool ``name`` and await its ``CallToolResult`` (async callers, on any event loop)."""
        return await asyncio.wrap_future(self._submit(name, arguments))

    def close(self) -> None:
        """Close the session and stop the server (idempotent; waits up to about :data:`CLOSE_TIMEOUT` s)."""
        self._finalizer()

    def _submit(self, name: str, arguments: dict[str, Any]) -> futures.Future[Any]:
        if self._finalizer.alive:
            try:
                return asyncio.run_coroutine_threadsafe(
                    _call(self.spec, self._session, name, arguments), self._loop
                )
            except RuntimeError:  # the loop was closed in between
                pass
        raise MCPServerError(self.spec.label, f"the connection is closed; tool {name!r} cannot be called")


async def _serve(spec: MCPServerSpec, session: _Session, opened: futures.Future[list[Any]]) -> None:
    """Open the session, list the tools into ``opened``, hold the session open until ``session.closing``."""
    from mcp import Client

    session.task = asyncio.current_task()
    try:
        if session.closing.is_set():  # closed before it began
            raise asyncio.CancelledError
        async with Client(spec.transport(session.limits.max_message_bytes)) as client:
            listing = await _list_tools(client)
            session.client = client
            opened.set_result(listing)
            await session.closing.wait()
            session.ended = "the connection was closed"
            session.client = None
    except BaseException as exc:  # noqa: BLE001 - handed to whoever waits; the loop thread must not die
        session.client = None
        session.ended = f"the session ended: {_describe(exc)}"
        if not opened.done():
            opened.set_exception(MCPServerError(spec.label, f"could not start a session: {_describe(exc)}"))
        log_debug("MCP server {} session ended: {!r}", spec.label, exc)
    finally:
        session.done.set()


async def _list_tools(client: Any) -> list[Any]:
    tools, cursor = [], None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


async def _call(spec: MCPServerSpec, session: _Session, name: str, arguments: dict[str, Any]) -> Any:
    """One ``tools/call``; the server's failures as :class:`MCPServerError` / :class:`MCPToolError`."""
    import anyio
    import httpx2
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    client = session.client
    if client is None:
        raise MCPServerError(spec.label, f"{session.ended or 'no session'}; tool {name!r} cannot be called")
    timeout = session.limits.call_timeout
    try:
        return await client.call_tool(name, arguments, read_timeout_seconds=timeout)
    except MCPError as exc:
        if exc.code == REQUEST_TIMEOUT and timeout is not None:
            raise MCPTimeoutError(spec.label, name, (
                f"tool {name!r} of MCP server {spec.label!r} did not answer within {timeout:g} s; the request was "
                "cancelled (the server may be hung; raise call_timeout= or LLAMABOT_MCP_TIMEOUT if it is just slow)"
            )) from exc
        if exc.code == CONNECTION_CLOSED:
            why = "close() was called" if session.closing.is_set() else "did the server exit?"
            raise MCPServerError(
                spec.label, f"the connection closed during a call of tool {name!r} ({why})"
            ) from exc
        raise MCPToolError(spec.label, name, f"MCP error {exc.code}: {exc.message}") from exc
    except (
        anyio.ClosedResourceError,
        anyio.BrokenResourceError,
        anyio.EndOfStream,
        OSError,
        httpx2.TransportError,
    ) as exc:
        raise MCPServerError(spec.label, f"lost during a call of tool {name!r}: {_describe(exc)}") from exc


def _describe(exc: BaseException) -> str:
    """The innermost cause of ``exc`` (anyio wraps failures in exception groups), as ``Type: message``."""
    while getattr(exc, "exceptions", None):  # an exception group (builtin from Python 3.11)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _shut_down(loop: asyncio.AbstractEventLoop, thread: threading.Thread, session: _Session) -> None:
    """End the session (the transport stops the server), then the loop and its thread."""
    if loop.is_closed():
        return
    try:
        loop.call_soon_threadsafe(session.stop)
    except RuntimeError:  # the loop is closing
        return
    if threading.current_thread() is thread:  # collected on the loop itself: the serving task ends on its own
        return
    if not session.done.wait(CLOSE_TIMEOUT):
        log_debug("MCP session did not end within {} s", CLOSE_TIMEOUT)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(CLOSE_TIMEOUT)
    if not loop.is_running():
        loop.close()

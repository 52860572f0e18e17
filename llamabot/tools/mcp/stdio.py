"""The stdio transport to an MCP server: its process in a process group of its own, stopped whole, and its
messages read with a bound on their size.

The ``mcp`` package's ``stdio_client`` signals the server's process group only when the server itself does not
exit after its stdin closes; a process the server started keeps running after a clean exit, and one that ignores
SIGTERM survives. Here stopping always ends the group: close stdin, wait up to :data:`GRACE_S` for the server,
SIGTERM the group, wait up to :data:`GRACE_S` for it to be gone, SIGKILL what is left.

Messages are JSON-RPC lines read in linear time (the package's reader joins the pending text at every chunk,
quadratic in a line's length). A line longer than ``max_message_bytes`` is never held whole: the bytes past the
first few hundred are dropped as they come; when that head names the id of a response, the call gets an MCP error
saying the response was too large (the model sees it), else the session ends.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp_types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from llamabot.observe.tracing import log_debug

#: Seconds the server has to exit after its stdin closes, and its group after SIGTERM.
GRACE_S = 2.0
#: JSON-RPC error code of a response dropped for its size (implementation-defined range).
TOO_LARGE = -32090
_HEAD_BYTES = 512
_RESPONSE_ID = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,18}|"(?:[^"\\]|\\.){0,200}")')


@asynccontextmanager
async def stdio_transport(
    argv: tuple[str, ...], env: dict[str, str], cwd: str | None, max_message_bytes: int
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``argv`` (its stderr is ours) and yield the ``mcp`` client's two message streams; on exit, stop its
    whole process group."""
    process = await anyio.open_process(
        list(argv), env=get_default_environment() | env, stderr=None, cwd=cwd, start_new_session=True
    )
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        async with to_session:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in _messages(process.stdout, max_message_bytes):
                    await to_session.send(message)

    async def write() -> None:
        try:
            async with from_session:
                async for message in from_session:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(text.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await to_session.aclose()  # the session sees the connection end instead of waiting forever

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(write)
            try:
                yield from_server, to_server
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)  # again if the task group failed first; idempotent


async def _messages(stdout: Any, limit: int) -> AsyncIterator[SessionMessage | Exception]:
    """The JSON-RPC messages on ``stdout``, one per line; a line over ``limit`` bytes as :func:`_too_large`."""
    pending: list[bytes] = []
    size, head, skipping = 0, b"", False
    async for chunk in stdout:
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not skipping:
                size += len(piece)
                if size > limit:  # keep the head (for the id), drop the rest as it comes
                    head, skipping, pending = (b"".join(pending) + piece)[:_HEAD_BYTES], True, []
                else:
                    pending.append(piece)
            if end < 0:
                break
            line = b"".join(pending)
            if skipping:
                message = _too_large(head, limit)
                if message is None:
                    log_debug("MCP server sent a message over {} bytes that is not a response", limit)
                    return  # ends the session: the server cannot be trusted to be in step any more
                yield message
            elif line.strip():
                yield _parsed(line)
            pending, size, head, skipping = [], 0, b"", False
            start = end + 1


def _parsed(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # handed to the session, which logs it; the line is lost, the session goes on
        return exc


def _too_large(head: bytes, limit: int) -> SessionMessage | None:
    """An error response standing for a response over ``limit`` bytes, when its head names the request's id."""
    if b'"method"' in head:  # a request or notification from the server, not a response
        return None
    found = _RESPONSE_ID.search(head)
    if found is None:
        return None
    raw = found.group(1)
    request_id: int | str = int(raw) if raw[:1] != b'"' else raw[1:-1].decode("utf-8", "replace")
    return SessionMessage(mcp_types.JSONRPCError(
        jsonrpc="2.0", id=request_id,
        error=mcp_types.ErrorData(code=TOO_LARGE, message=(
            f"the server's response was over {limit} bytes and was dropped unread; ask for less (or raise "
            "LLAMABOT_MCP_MAX_MESSAGE_BYTES)")),
    ))


async def _stop(process: Any) -> None:
    """Close the server's stdin, give it :data:`GRACE_S` to exit, then end its whole process group."""
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    await _wait(lambda: process.returncode is not None)
    pgid = process.pid  # the leader's pid is the group id (start_new_session); valid while any member lives
    if _signal_group(pgid, signal.SIGTERM):
        if not await _wait(lambda: not _signal_group(pgid, 0)):
            _signal_group(pgid, signal.SIGKILL)
            await _wait(lambda: not _signal_group(pgid, 0))
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
    with suppress(ProcessLookupError, PermissionError):
        process.kill()  # a no-op on an exited process; the transport is closed with it below
    with suppress(Exception):
        await process.aclose()


def _signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to the group; whether it still has members (zombies count until reaped)."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _wait(done: Any, seconds: float = GRACE_S) -> bool:
    with anyio.move_on_after(seconds):
        while not done():
            await anyio.sleep(0.02)
        return True
    return False

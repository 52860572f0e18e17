"""Which MCP server to talk to: a command run as a subprocess (stdio) or a streamable-HTTP URL.

``server_spec("python server.py")`` / ``server_spec(["python", "server.py"])`` / ``server_spec("http://...")`` ->
an :class:`MCPServerSpec` that names the server in every error (the command, or the URL without credentials)
and makes the ``mcp`` package's transport for it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from llamabot.errors import MCPServerError, excerpt


@dataclass(frozen=True)
class MCPServerSpec:
    """One MCP server: ``argv`` (a stdio server's command line) or ``url`` (streamable HTTP); ``label`` names it
    in errors. ``env`` is added to the few variables a stdio server inherits (the ``mcp`` package's safe list:
    ``PATH``, ``HOME``...); ``cwd`` is its working directory."""

    label: str
    argv: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def transport(self, max_message_bytes: int = 32 << 20) -> Any:
        """The ``mcp`` client transport (an async context manager yielding the two message streams): the
        package's streamable-HTTP client for a URL, :func:`~llamabot.tools.mcp.stdio.stdio_transport` for a
        command (its process group stopped whole; messages over ``max_message_bytes`` dropped)."""
        if self.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.url)
        from llamabot.tools.mcp.stdio import stdio_transport

        return stdio_transport(self.argv, dict(self.env), self.cwd, max_message_bytes)


def server_spec(
    server: str | Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None
) -> MCPServerSpec:
    """Parse ``server``: an ``http://`` or ``https://`` URL, a command line (split as a POSIX shell would, no
    shell run) or an argv list. Raises :class:`MCPServerError` naming what is wrong with it."""
    if isinstance(server, str):
        text = server.strip()
        if text.lower().startswith(("http://", "https://")):
            parts = urlsplit(text)
            if not parts.hostname:
                raise MCPServerError(text, "the URL has no host; use e.g. http://127.0.0.1:8000/mcp")
            if env or cwd:
                raise MCPServerError(
                    _without_credentials(text), "env= and cwd= apply to a command, not to a URL"
                )
            return MCPServerSpec(label=_without_credentials(text), url=text)
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise MCPServerError(text, f"cannot split the command line: {exc}") from exc
    elif isinstance(server, Sequence) and all(isinstance(a, str) for a in server):
        argv = list(server)
    else:
        raise MCPServerError(
            excerpt(server), "give a command (a string or a list of strings) or an http(s):// URL"
        )
    if not argv or not argv[0]:
        raise MCPServerError(excerpt(server), "the command is empty")
    if env is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise MCPServerError(shlex.join(argv), "env must map strings to strings")
    return MCPServerSpec(
        label=shlex.join(argv),
        argv=tuple(argv),
        env=dict(env or {}),
        cwd=str(cwd) if cwd is not None else None,
    )


def _without_credentials(url: str) -> str:
    """The URL as errors show it: no ``user:password@``."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()

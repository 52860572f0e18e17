"""Markdown code blocks, and a notebook that runs them in order in one namespace.

A block is a fenced code block (```` ```python ````, ```` ```bash ````...) with the line its code starts on.
The notebook compiles each block with top-level ``await`` allowed (as Jupyter does) and runs the coroutine
such code becomes on one event loop kept for the whole document, so an object made in one block (an
``AsyncAgentBot``) can be awaited in a later one.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`\s]*)[^`]*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file: its info string (``python``, ``bash``...), its code and the
    1-based line of the file its code starts on."""

    path: Path
    info: str
    code: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"

    @property
    def first_line(self) -> str:
        return next((line.strip() for line in self.code.splitlines() if line.strip()), "")


def blocks_of(path: Path, info: str | None = None) -> list[Block]:
    """The fenced code blocks of a Markdown file in order (only those with this ``info`` string, if given). An
    unclosed fence is an error: the rest of the file would silently read as code."""
    blocks, lines = [], path.read_text(encoding="utf-8").splitlines()
    opened: tuple[str, int] | None = None
    body: list[str] = []
    for number, line in enumerate(lines, start=1):
        match = _FENCE.match(line)
        if opened is None and match:
            opened, body = (match["info"], number + 1), []
        elif opened is not None and line.strip() == "```":
            if info is None or opened[0] == info:
                blocks.append(Block(path, opened[0], "\n".join(body) + "\n", opened[1]))
            opened = None
        elif opened is not None:
            body.append(line)
    if opened is not None:
        raise AssertionError(f"{path}:{opened[1] - 1}: a code fence is never closed")
    return blocks


class BlockFailed(AssertionError):
    """A block raised: the message names the file and line of the block and of the failing statement."""


class Notebook:
    """Runs blocks in order in one namespace and one event loop, as a notebook runs its cells."""

    def __init__(self, namespace: dict[str, Any] | None = None):
        # a real module, as a notebook's __main__ is: classes defined in the blocks (dataclasses, pydantic models)
        # look their module up in sys.modules
        module = types.ModuleType("__readme__")
        sys.modules[module.__name__] = module
        module.__dict__.update(namespace or {})
        self.namespace: dict[str, Any] = module.__dict__
        self.loop = asyncio.new_event_loop()

    def run(self, block: Block) -> None:
        source = "\n" * (block.line - 1) + block.code  # so tracebacks show the Markdown file's own line numbers
        try:
            code = compile(source, str(block.path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(code, self.namespace)  # noqa: S307 - the README's own code, run as a reader would
            if inspect.iscoroutine(result):
                self.loop.run_until_complete(result)
        except Exception as exc:
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(block.path)]
            at = f", line {frames[-1].lineno}: {frames[-1].line}" if frames else ""
            raise BlockFailed(f"{block.where} (the block starting there{at}) raised "
                              f"{type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        """Cancel what the blocks left running on the loop (LiteLLM's logging worker, for one), let it finish,
        then close the loop: a coroutine left pending on a closed loop fails when it is collected later."""
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()

        async def drain() -> None:
            await asyncio.gather(*pending, return_exceptions=True)

        self.loop.run_until_complete(drain())
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

"""Debug output in the seed's format: ``[HH:MM:SS.mmm] [P1:R00] Planning for: ...``.

| level | name | shows |
|---|---|---|
| 0 | OFF | nothing (the CLI shows its results table only) |
| 1 | SUMMARY | one line per request: start, final ranking, totals |
| 2 | VERBOSE | phases, the strategy, the LWT steps, each step's output |
| 3 | FULL | every model prompt and response in full |

The level comes from ``--debug`` / the ``debug=`` argument, else from ``$ANOT_DEBUG`` (default 0). A
:class:`DebugLog` is an ordinary object a bot holds; its sink (default: stderr) receives whole lines.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

OFF, SUMMARY, VERBOSE, FULL = 0, 1, 2, 3
ENV_VAR = "ANOT_DEBUG"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def level_from_env(default: int = OFF) -> int:
    """``$ANOT_DEBUG`` as a level 0-3 (an unreadable value raises ``ValueError`` naming it)."""
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        return default
    try:
        level = int(raw)
    except ValueError:
        raise ValueError(f"{ENV_VAR}={raw!r}: use a level 0-3") from None
    return min(max(level, OFF), FULL)


def format_line(phase: str, request: str, message: str, now: datetime | None = None) -> str:
    """One line: ``[HH:MM:SS.mmm] [P1:R00] message``."""
    stamp = (now or datetime.now()).strftime("%H:%M:%S.%f")[:-3]
    return f"[{stamp}] [{phase}:{request}] {message}"


@dataclass
class DebugLog:
    """Writes debug lines at or below ``level`` to ``sink``."""

    level: int = OFF
    sink: Callable[[str], None] = field(default=_stderr, repr=False)

    @classmethod
    def resolve(cls, debug: int | DebugLog | None, sink: Callable[[str], None] | None = None) -> DebugLog:
        """A log from an explicit level or log, else from ``$ANOT_DEBUG``."""
        if isinstance(debug, DebugLog):
            return debug
        level = level_from_env() if debug is None else min(max(int(debug), OFF), FULL)
        return cls(level, sink or _stderr)

    def enabled(self, level: int) -> bool:
        return self.level >= level

    def __call__(self, level: int, phase: str, request: str, message: Any) -> None:
        if self.level >= level:
            text = str(message)
            for index, line in enumerate(text.splitlines() or [""]):
                self.sink(format_line(phase, request, line) if index == 0 else "    " + line)

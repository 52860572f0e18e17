"""What a caller of the embedded model's batching engine submits and gets back: a :class:`Request` (its prompt
tokens, :class:`Sampling`, stop strings, :class:`PrefixPlan`), read as text pieces and then a :class:`Completion`;
the engine's errors; how stop strings are found in streamed text. The engine itself:
:mod:`~llamabot.models.local.scheduler`."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from llamabot.models.local.prefix_cache import PrefixState


class LocalGenerationError(RuntimeError):
    """The embedded model's output cannot be used (e.g. a tool call cut short by ``max_tokens``)."""


class LocalBusyError(LocalGenerationError):
    """The embedded model's request queue is full (``LLAMABOT_LOCAL_QUEUE``)."""


#: What a cancelled request's :meth:`Request.results` raises if its caller still reads it.
CANCELLED = LocalGenerationError("the request was cancelled")


@dataclass(frozen=True, slots=True)
class Sampling:
    """How one sequence picks its tokens; temperature 0 is greedy."""

    temperature: float = 0.0
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    seed: int | None = None
    grammar: str | None = None  # GBNF, root rule "root"


@dataclass(slots=True)
class Completion:
    """What one request produced."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" or "length"
    prefix: str  # where the prompt's prefix came from: none, context, shared, memory, disk, evaluated


@dataclass
class PrefixPlan:
    """Where a request's prompt state is saved on the way: ``fixed`` tokens (its leading system part, 0: none)
    go to ``save_fixed`` when they had to be evaluated; all but the last token go to ``save_prompt``. ``load_fixed``
    finds a saved state of the fixed part; ``longest`` the longest in-process state of a prefix."""

    fixed: int = 0
    longest: Callable[[Sequence[int]], PrefixState | None] | None = None
    load_fixed: Callable[[tuple[int, ...]], PrefixState | None] | None = None
    save_fixed: Callable[[PrefixState], None] | None = None
    save_prompt: Callable[[PrefixState], None] | None = None


@dataclass(eq=False)
class Request:
    """One generation, submitted to a :class:`Scheduler`. Iterate :meth:`results` in the caller's thread."""

    tokens: tuple[int, ...]
    sampling: Sampling
    stop: tuple[str, ...]
    max_tokens: int
    stream: bool
    plan: PrefixPlan
    events: queue.SimpleQueue[tuple[str, Any]] = field(default_factory=queue.SimpleQueue)
    cancelled: threading.Event = field(default_factory=threading.Event)
    wake: Callable[[], None] = lambda: None

    def cancel(self) -> None:
        """Stop generating; the sequence is freed before the next step."""
        if not self.cancelled.is_set():
            self.cancelled.set()
            self.wake()

    def results(self) -> Generator[str, None, Completion]:
        """The text pieces as they are made (only when ``stream``), then the :class:`Completion`; the request's
        error is raised here. Closing the generator early cancels the request."""
        try:
            while True:
                kind, value = self.events.get()
                if kind == "piece":
                    yield value
                elif kind == "done":
                    return value
                else:
                    raise value
        finally:
            self.cancel()


def held_back(text: str, stops: Sequence[str]) -> int:
    """How many trailing characters of ``text`` could still be the start of a stop string."""
    longest = 0
    for stop in stops:
        for n in range(min(len(stop) - 1, len(text)), longest, -1):
            if text.endswith(stop[:n]):
                longest = n
                break
    return longest


def first_stop(text: str, stops: Sequence[str], start: int) -> int:
    """Where the earliest stop string in ``text`` begins (searching from ``start``), or -1."""
    found = [i for i in (text.find(s, start) for s in stops if s) if i >= 0]
    return min(found) if found else -1

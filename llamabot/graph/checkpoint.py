"""Checkpoints: a run's state saved at a node boundary, from which the run can continue (in this process or
another one, after a crash or a pause).

A :class:`Checkpoint` is taken by :class:`CheckpointHook` when a node step ends (after the node's ``post``): it
names the node and the action it chose, and holds the run's state as JSON (:mod:`llamabot.graph.codec`).
``GraphBot.resume(checkpoint)`` restores the state and walks on from the node that action leads to. Steps that
record no span (a decision that only pops a queued call, ToT's bookkeeping) are not boundaries; the state at the
next boundary covers them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from llamabot.graph.codec import dumps_state
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Span


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A run's state after node ``node`` chose ``action``; ``state`` is the codec's JSON text."""

    node: str
    action: str | None
    state: str
    trace_id: str = ""
    step: int = 0  # how many checkpoints the run had taken before this one

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Checkpoint:
        return cls(**json.loads(text))


class CheckpointHook(RunHooks):
    """Take a :class:`Checkpoint` at every node boundary of the outermost run and pass it to ``save``.

    ``allowed``: classes the codec may revive besides ``llamabot``'s own (see :func:`llamabot.graph.codec`).
    ``save`` runs in the run's task: keep it quick, or hand the text to a writer.
    """

    def __init__(self, save: Callable[[Checkpoint], None], allowed: Iterable[type] = ()):
        self.save = save
        self.allowed = tuple(allowed)
        self.depth = 0
        self.steps = 0

    def on_start(self, span: Span, state: Any) -> None:
        if span.category == "run":
            self.depth += 1

    def on_end(self, span: Span, state: Any) -> None:
        if span.category == "run":
            self.depth -= 1
            return
        if state is None or self.depth != 1 or span.error is not None:
            return
        text = dumps_state(state, allowed=self.allowed)
        self.save(Checkpoint(span.name, span.attributes.get("action"), text, span.trace_id, self.steps))
        self.steps += 1

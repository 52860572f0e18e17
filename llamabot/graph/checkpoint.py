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
from dataclasses import asdict, dataclass, fields
from typing import Any

from llamabot.errors import excerpt
from llamabot.graph.codec import StateCodecError, dumps_state
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Span

#: Each field of a checkpoint: the types it takes.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "node": (str,), "action": (str, type(None)), "state": (str,), "trace_id": (str,), "step": (int,),
}


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A run's state after node ``node`` chose ``action``; ``state`` is the codec's JSON text. A field of the wrong
    type raises :class:`StateCodecError` naming it (a checkpoint may come back from storage tampered with)."""

    node: str
    action: str | None
    state: str
    trace_id: str = ""
    step: int = 0  # how many checkpoints the run had taken before this one

    def __post_init__(self) -> None:
        for name, types in _FIELD_TYPES.items():
            value = getattr(self, name)
            if type(value) not in types:
                expected = " or ".join("None" if t is type(None) else t.__name__ for t in types)
                raise StateCodecError(f"checkpoint[{name!r}]", f"a {type(value).__name__} where {expected} was "
                                      f"expected: {excerpt(value, 80)}")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | bytes) -> Checkpoint:
        """The checkpoint :meth:`to_json` wrote. Anything else (not JSON, not an object, keys missing, unknown or
        of the wrong type) raises :class:`StateCodecError` naming what was wrong."""
        if not isinstance(text, (str, bytes, bytearray)):
            raise StateCodecError("checkpoint", f"a checkpoint is JSON text, not a {type(text).__name__}")
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise StateCodecError("checkpoint", f"not JSON text: {exc}") from exc
        except RecursionError as exc:
            raise StateCodecError("checkpoint", "the JSON text nests too deeply to read") from exc
        if type(data) is not dict:
            raise StateCodecError("checkpoint", f"a JSON object was expected, not a {type(data).__name__}")
        names = [f.name for f in fields(cls)]
        missing = [name for name in ("node", "action", "state") if name not in data]
        unknown = sorted(set(data) - set(names))
        if missing or unknown:
            raise StateCodecError("checkpoint", f"keys missing: {missing}; unknown keys: {excerpt(unknown, 80)} "
                                  f"(a checkpoint has the keys {names})")
        return cls(**data)


class CheckpointHook(RunHooks):
    """Take a :class:`Checkpoint` at every node boundary of the outermost run and pass it to ``save``.

    ``allowed``: classes the codec may revive besides ``llamabot``'s own (see :func:`llamabot.graph.codec`).
    ``save`` runs in the run's task: keep it quick, or hand the text to a writer. Registered on a bot, it serves
    concurrent runs: each run counts its own steps (:meth:`for_run`).
    """

    sequential = True  # one checkpoint per boundary: a run's tool calls never start early

    def __init__(self, save: Callable[[Checkpoint], None], allowed: Iterable[type] = ()):
        self.save = save
        self.allowed = tuple(allowed)
        self.depth = 0
        self.steps = 0

    def for_run(self) -> CheckpointHook:
        return CheckpointHook(self.save, self.allowed)

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

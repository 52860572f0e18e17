"""The LWT script phase 2 edits: one per run, validated on every insert and set.

Positions are 1-based, as ``lwt_list`` shows them. A step is checked when it goes in: its syntax, a unique id,
no dependency cycle, and its data paths (item numbers in range, no dunders, ``~`` last). A reference to a step
that is not written yet is allowed while editing (the note says so); :meth:`LWTScript.finish` requires every
reference to be defined. A path whose key no item has is accepted with a note listing the keys that exist
there, so the model can fix a typo.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from llamabot.reasoning.anot.lwt import (
    LWTError,
    LWTStep,
    LWTSyntaxError,
    execution_layers,
    parse_step,
    render_lwt,
    unknown_references,
)
from llamabot.reasoning.anot.paths import MISSING, DataPathError, parse_path, resolve, walk
from llamabot.reasoning.anot.substitution import variable_paths


def path_notes(step: LWTStep, items: Sequence[Any]) -> list[str]:
    """Check the step's data paths against ``items``: raise :class:`LWTSyntaxError` for a path that can never
    be valid; return notes for paths that no item has a value for."""
    notes = []
    for variable, path in variable_paths(step.prompt):
        try:
            segments = parse_path(path)
            values = resolve(items, ("*", *segments[1:])) if segments else []
            if segments:
                resolve(items, segments)  # checks the item number itself
        except DataPathError as exc:
            raise LWTSyntaxError(f"step {step.id!r}: {variable}: {exc.reason}", step_id=step.id) from exc
        if values and all(v is MISSING for v in values):
            notes.append(f"note: {variable} is missing in every item; {_keys_hint(items, segments[1:])}")
    return notes


def _keys_hint(items: Sequence[Any], segments: Sequence[str]) -> str:
    for depth in range(len(segments) - 1, -1, -1):
        keys: dict[str, None] = {}
        for item in items:
            value = walk(item, segments[:depth])
            if isinstance(value, dict):
                keys.update(dict.fromkeys(str(k) for k in value))
        if keys:
            where = "".join(f"[{s}]" for s in segments[:depth]) or "the item"
            shown = ", ".join(list(keys)[:40])
            return f"keys at {where}: {shown}"
    return "check the path with read()"


class LWTScript:
    """A per-run, editable LWT script over ``items`` (never shared between runs). The steps are a plain list of
    :class:`LWTStep` (data: ANoT keeps it in the run state); this object only edits and checks them."""

    def __init__(self, steps: Iterable[LWTStep] = (), items: Sequence[Any] = ()):
        self.items = items
        self.steps: list[LWTStep] = list(steps)

    @classmethod
    def editing(cls, steps: list[LWTStep], items: Sequence[Any] = ()) -> LWTScript:
        """A script that edits ``steps`` itself, in place (a run state's step list), not a copy."""
        script = cls((), items)
        script.steps = steps
        return script

    def __len__(self) -> int:
        return len(self.steps)

    def render(self) -> str:
        return render_lwt(self.steps)

    def listing(self) -> str:
        """The steps with their 1-based positions, as ``lwt_list`` shows them."""
        if not self.steps:
            return "(the script is empty)"
        return "\n".join(f"{position}. {step.render()}" for position, step in enumerate(self.steps, start=1))

    def _checked(self, step: LWTStep, candidate: list[LWTStep], replaced: LWTStep | None) -> list[str]:
        if any(s.id == step.id and s is not replaced for s in self.steps):
            raise LWTSyntaxError(
                f"a step with id {step.id!r} already exists; use lwt_set to replace it, or choose another id",
                step_id=step.id,
            )
        notes = path_notes(step, self.items)
        check_cycles(candidate)
        pending = unknown_references(candidate).get(step.id)
        if pending:
            notes.append(f"note: {', '.join(pending)} not written yet; add it before done()")
        return notes

    def insert(self, position: int, text: str) -> str:
        """Insert the step so that it becomes step ``position`` (clamped to 1..len+1)."""
        step = parse_step(text)
        index = min(max(position, 1), len(self.steps) + 1) - 1
        notes = self._checked(step, [*self.steps[:index], step, *self.steps[index:]], None)
        self.steps.insert(index, step)
        return " ".join([f"inserted ({step.id}) as step {index + 1} of {len(self.steps)}.", *notes])

    def set(self, position: int, text: str) -> str:
        """Replace step ``position`` (1-based)."""
        if not 1 <= position <= len(self.steps):
            valid = f"1..{len(self.steps)}" if self.steps else "none (the script is empty; use lwt_insert)"
            raise IndexError(f"no step {position}; valid positions: {valid}")
        step = parse_step(text)
        old = self.steps[position - 1]
        if (step.id, step.prompt, step.kind) == (old.id, old.prompt, old.kind):
            return f"step {position} is already exactly this; nothing changed. If the script is right, call done()."
        notes = self._checked(step, [*self.steps[: position - 1], step, *self.steps[position:]], old)
        self.steps[position - 1] = step
        return " ".join([f"set step {position} to ({step.id}).", *notes])

    def finish(self) -> list[list[LWTStep]]:
        """Check the whole script is executable; return its layers. Raises an :class:`LWTError` saying what to fix."""
        if not self.steps:
            raise LWTError("the script is empty; insert a step per condition and a (final) step, then call done()")
        return execution_layers(self.steps)


def check_cycles(steps: Sequence[LWTStep]) -> None:
    """Raise :class:`LWTCycleError` if the defined steps reference each other in a cycle (references to
    steps not written yet are ignored here)."""
    defined = {s.id for s in steps}
    known = []
    for step in steps:
        prompt = step.prompt
        for ref in step.references:
            if ref not in defined:
                prompt = prompt.replace("{(" + ref + ")}", "")
        known.append(LWTStep(step.id, prompt, step.line, step.kind))
    execution_layers(known)

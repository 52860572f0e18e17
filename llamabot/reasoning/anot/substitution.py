"""Fill an LWT step's prompt: replace its variables with data and earlier outputs. Pure.

| Variable | Becomes |
|---|---|
| ``{(context)}[3][attributes][WiFi]`` (also ``{(input)}``, ``{(items)}``) | item 3's value (items are 1-indexed) |
| ``{(items)}[*][attributes][WiFi]`` | every item's value: ``1=free, 2=no, 3=missing`` |
| ``{(items)}`` (no path) | every item, compactly |
| ``{(query)}`` | the request text |
| ``{(c1)}`` | the output of step ``c1`` |

Every substitution is capped at ``max_chars`` characters (the cut is marked), so one variable can never
flood a prompt. A path that cannot be valid raises :class:`SubstitutionError` naming the step and the
variable; a value the data lacks is ``missing`` (see ``paths.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llamabot.reasoning.anot.lwt import ITEM_VARIABLES, LWTError
from llamabot.reasoning.anot.paths import DataPathError, cap, parse_path, render_value, resolve

DEFAULT_MAX_CHARS = 2000

_VARIABLE = re.compile(r"\{\((?P<name>[A-Za-z0-9_][A-Za-z0-9_.\-]*)\)\}(?P<path>(?:\[[^\[\]\n]*\])*)")


class SubstitutionError(LWTError):
    """A variable in a step's prompt cannot be filled. Names the step, the variable and why."""

    def __init__(self, step_id: str, variable: str, reason: str):
        self.step_id = step_id
        self.variable = variable
        self.reason = reason
        super().__init__(f"step {step_id!r}: cannot fill {variable}: {reason}")


@dataclass(frozen=True, slots=True)
class SubstitutionContext:
    """What a prompt's variables are filled from: the request, the items and the outputs so far."""

    query: str
    items: Sequence[Any]
    outputs: Mapping[str, str] = field(default_factory=dict)
    max_chars: int = DEFAULT_MAX_CHARS


def render_items(items: Sequence[Any]) -> str:
    """Every item on its own line, ``1: {...}`` (what ``{(items)}`` without a path becomes)."""
    return "\n".join(f"{number}: {render_value(item)}" for number, item in enumerate(items, start=1))


def render_resolved(value: Any, all_items: bool) -> str:
    """One value, or ``1=v1, 2=v2, ...`` for a ``[*]`` selection."""
    if all_items:
        return ", ".join(f"{number}={render_value(v)}" for number, v in enumerate(value, start=1))
    return render_value(value)


def _fill(match: re.Match[str], context: SubstitutionContext, step_id: str) -> str:
    name, path = match.group("name"), match.group("path")
    variable = match.group(0)
    if name in ITEM_VARIABLES:
        if not path:
            return cap(render_items(context.items), context.max_chars)
        try:
            segments = parse_path(path)
            value = resolve(context.items, segments)
        except DataPathError as exc:
            raise SubstitutionError(step_id, variable, exc.reason) from exc
        return cap(render_resolved(value, segments[0] == "*"), context.max_chars)
    if name == "query":
        text = context.query
    elif name in context.outputs:
        text = context.outputs[name]
    else:
        known = ", ".join(context.outputs) or "none yet"
        raise SubstitutionError(step_id, variable, f"no step {name!r} has produced an output (outputs: {known})")
    return cap(text, context.max_chars) + path  # a path after a non-item variable is plain text


def substitute(prompt: str, context: SubstitutionContext, step_id: str = "?") -> str:
    """``prompt`` with every variable filled from ``context``. Raises :class:`SubstitutionError`."""
    return _VARIABLE.sub(lambda match: _fill(match, context, step_id), prompt)


def variable_paths(prompt: str) -> list[tuple[str, str]]:
    """The item variables with a path in ``prompt``, as ``(variable text, path)`` (for validation)."""
    return [(m.group(0), m.group("path")) for m in _VARIABLE.finditer(prompt) if m.group("name") in ITEM_VARIABLES and m.group("path")]

"""Phase 2's tools: ``lwt_list``, ``lwt_insert``, ``lwt_set``, ``read`` and the terminal ``done``.

They are ordinary ``@tool`` functions (immutable descriptions, no state), called like every tool through the
one tool-call logic (:mod:`llamabot.tools.call`, by the agent graph's tool node). Each run's own script and data
reach them through the hidden ``_globals_dict`` parameter: ANoT's tool node (``LWTToolNode``) passes
``{PHASE2_KEY: Phase2Context(...)}``, a view of the run's state (the script is ``state["script"]``, a list of
steps edited in place; the calls are recorded in ``state["phase2"]["tool_calls"]``), so two runs never share a
script and the script is saved with the state. A tool that is
given a malformed step raises; the call's outcome carries the error, which the agent graph shows to the model
as the tool's result (bounded by ``max_errors``), it does not crash. They edit an in-memory script and return
at once (``blocking=False``), so async runs call them on the event loop, without a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llamabot.observe.tracing import current_span
from llamabot.reasoning.anot.paths import DataPathError, item_number, parse_path, preview, walk
from llamabot.reasoning.anot.script import LWTScript
from llamabot.tools.tool import tool

PHASE2_KEY = "anot_phase2"
DEFAULT_READ_CHARS = 1200


@dataclass
class Phase2Context:
    """What the tools of one run work on: the script being written (over the run state's step list), the data
    ``read`` may look at, and the record of the calls made (the state's ``phase2["tool_calls"]``)."""

    script: LWTScript
    items: Sequence[Any]
    query: str = ""
    read_chars: int = DEFAULT_READ_CHARS
    calls: list[str] = field(default_factory=list)

    def note(self, call: str, result: str) -> None:
        """Record a call; its short form and a summary of the result go on the tool-call span (for the debug
        lines, see ``debug.py``)."""
        self.calls.append(call)
        step = current_span()
        if step is not None and step.category == "tool_call":
            step.attributes["lwt_note"] = f"{call} -> {result}"


def _context(globals_dict: dict[str, Any] | None) -> Phase2Context:
    context = (globals_dict or {}).get(PHASE2_KEY)
    if not isinstance(context, Phase2Context):
        raise RuntimeError(
            f"the LWT tools need a Phase2Context under globals_dict[{PHASE2_KEY!r}]; run them through ANoTBot"
        )
    return context


@tool(blocking=False)
def lwt_list(_globals_dict: dict[str, Any] | None = None) -> str:
    """Show the script, one step per line with its position."""
    context = _context(_globals_dict)
    listing = context.script.listing()
    context.note("lwt_list()", f"{len(context.script)} steps")
    return listing


@tool(blocking=False)
def lwt_insert(idx: int, step: str, _globals_dict: dict[str, Any] | None = None) -> str:
    """Insert a step at position idx (1 = first; past the end appends).

    Args:
        idx: Position from 1.
        step: One step: (id)=CHECK("path op value") or (id)=LLM("prompt").
    """
    return _edit("insert", idx, step, _globals_dict)


@tool(blocking=False)
def lwt_set(idx: int, step: str, _globals_dict: dict[str, Any] | None = None) -> str:
    """Replace step idx with a new step.

    Args:
        idx: Position from 1.
        step: One step: (id)=CHECK("path op value") or (id)=LLM("prompt").
    """
    return _edit("set", idx, step, _globals_dict)


def _edit(how: str, idx: int, step: str, globals_dict: dict[str, Any] | None) -> str:
    """``lwt_insert`` / ``lwt_set``: change the script, note the call in the run's log."""
    context = _context(globals_dict)
    result = context.script.insert(idx, step) if how == "insert" else context.script.set(idx, step)
    context.note(f"lwt_{how}({idx}, {step!r})", result)
    return result


@tool(blocking=False)
def read(path: str, _globals_dict: dict[str, Any] | None = None) -> str:
    """Show the data at a path (shortened).

    Args:
        path: e.g. "[1][attributes]" (item 1's attributes); "" for an overview.
    """
    context = _context(_globals_dict)
    items = context.items
    segments = parse_path(path)
    if not segments:
        keys: dict[str, None] = {}
        for item in items:
            if isinstance(item, dict):
                keys.update(dict.fromkeys(str(k) for k in item))
        result = f"{len(items)} items, numbered 1..{len(items)}; item fields: {', '.join(keys)}"
    elif segments[0] == "query":
        result = preview(context.query, context.read_chars)
    else:
        position = item_number(segments[0], len(items), path)
        if position is None:
            raise DataPathError(path, "*", "read one item at a time, e.g. read(\"[1][attributes]\")")
        result = preview(walk(items[position], segments[1:], path), context.read_chars)
    context.note(f"read({path!r})", f"{len(result)} chars")
    return result


@tool(loopback_name=None, blocking=False)
def done(_globals_dict: dict[str, Any] | None = None) -> str:
    """Finish: the script must check every condition and end with (final)."""
    context = _context(_globals_dict)
    layers = context.script.finish()
    context.note("done()", f"{len(context.script)} steps in {len(layers)} layers")
    return context.script.render()


#: The order the model sees them in: ``done`` first, ``lwt_list`` last. The prompt already shows the script and
#: asks for ``done()`` when it is right; the 1.5B model took the first listed tool, ``lwt_list``, as its first
#: decision in 12 of the 20 dev requests (a turn that re-shows the script) when it came first.
PHASE2_TOOLS = (done, lwt_set, lwt_insert, read, lwt_list)

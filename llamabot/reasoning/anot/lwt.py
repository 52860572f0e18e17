"""LWT scripts: parse ``(id)=LLM('...')`` and ``(id)=CHECK('...')`` steps, find their ``{(step_id)}`` references, order them in layers.

Pure: no model, no I/O. An LWT script is one step per line::

    (c1)=CHECK('{(items)}[*][attributes][GoodForKids] == True')
    (c2)=LLM("WiFi per item: {(items)}[*][attributes][WiFi]. Which are free? Output: [indices]")
    (final)=LLM('c1={(c1)}, c2={(c2)}. Score +1 per match. Output top-5: [best, ...]')

An ``LLM`` step's prompt is filled and sent to the model; a ``CHECK`` step is evaluated by the program
(``checks.py``), and its expression is checked when the step is parsed. Step ids are names such as ``c1``, ``5.agg`` or ``final``. ``{(context)}``, ``{(input)}``, ``{(items)}`` and
``{(query)}`` are data variables (see ``substitution.py``); any other ``{(name)}`` is a reference to the output
of step ``name``. References make a dependency DAG; :func:`execution_layers` orders it into layers whose steps
are independent of each other. Unlike upstream ANoT (which silently ran such steps in one last layer), a cycle
or a reference to a step that does not exist is an error naming the steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from llamabot.errors import DependencyCycleError, LlamabotError
from llamabot.graph.layers import topological_layers
from llamabot.reasoning.anot.checks import Check, CheckError, parse_check

#: Data variables; every other ``{(name)}`` refers to a step's output.
ITEM_VARIABLES = frozenset({"context", "input", "items"})
BUILTIN_VARIABLES = ITEM_VARIABLES | {"query"}
#: The id of the step whose output is the ranking (else the last step is).
FINAL_ID = "final"

_ID = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*"
_ID_RE = re.compile(rf"^{_ID}$")
_REFERENCE = re.compile(rf"\{{\(({_ID})\)\}}")
# The id and the blanks around it: ``\s*`` twice around an optional id was quadratic on "(" and blanks.
_HEAD = re.compile(r"\(\s*(?:(?P<id>[^()\s]+)\s*)?\)\s*=\s*(?:(?P<call>LLM|CHECK)\s*\(\s*)?")
# A later step's head at a line start. Blanks, not \s: \s* after \n also eats newlines, which made the search
# quadratic on a prompt of many blank lines.
_NEXT_HEAD = re.compile(r"\n[ \t\r\f\v]*\([ \t]*[^()\s]+[ \t]*\)[ \t]*=")


class LWTError(LlamabotError, ValueError):
    """Base class of LWT script errors (a ``ValueError``)."""


class LWTSyntaxError(LWTError):
    """A script or step is not of the form ``(id)=LLM('prompt')``. ``line`` is 1-based (0: unknown)."""

    def __init__(self, message: str, line: int = 0, step_id: str | None = None):
        self.line = line
        self.step_id = step_id
        where = f"line {line}: " if line else ""
        super().__init__(f"{where}{message}")


class LWTReferenceError(LWTError):
    """Steps reference ``{(id)}`` outputs that no step defines. ``missing`` maps each step id to its unknown
    references; ``steps`` lists the referencing steps."""

    def __init__(self, missing: dict[str, tuple[str, ...]], defined: Sequence[str]):
        self.missing = missing
        self.steps = tuple(missing)
        parts = [
            f"step {sid!r} references {', '.join('{(' + r + ')}' for r in refs)}" for sid, refs in missing.items()
        ]
        super().__init__(
            "unknown reference: " + "; ".join(parts)
            + f", which no step defines (defined steps: {', '.join(defined) or 'none'}); define those steps or "
            "fix the references"
        )


class LWTCycleError(LWTError):
    """The steps' references form a cycle. ``cycle`` is the cycle in order (first id repeated at the end);
    ``steps`` are all the steps that can never run (in or behind a cycle)."""

    def __init__(self, cycle: tuple[str, ...], blocked: tuple[str, ...]):
        self.cycle = cycle
        self.steps = blocked
        super().__init__(
            f"dependency cycle: {' -> '.join(cycle)}; steps that can never run: {', '.join(blocked)}. "
            "A step may only reference steps that do not (directly or indirectly) reference it"
        )


StepKind = Literal["LLM", "CHECK"]
LLM: StepKind = "LLM"
CHECK: StepKind = "CHECK"


@dataclass(frozen=True, slots=True)
class LWTStep:
    """One step: its id, its prompt template, (when parsed from a script) its 1-based line, and its kind:
    ``LLM`` (the model answers the filled prompt) or ``CHECK`` (the program compares every item's value at a path
    with a value; ``prompt`` is that expression, see ``checks.py``)."""

    id: str
    prompt: str
    line: int = 0
    kind: StepKind = LLM

    def __post_init__(self) -> None:
        if self.kind not in (LLM, CHECK):
            raise ValueError(f"step {self.id!r}: kind must be {LLM!r} or {CHECK!r}, got {self.kind!r}")

    @property
    def check(self) -> Check:
        """A CHECK step's parsed expression. Raises :class:`CheckError` (or ``TypeError`` for an LLM step)."""
        if self.kind != CHECK:
            raise TypeError(f"step {self.id!r} is an {self.kind} step, not a CHECK")
        return parse_check(self.prompt)

    @property
    def references(self) -> tuple[str, ...]:
        """The step ids this step's prompt references, in order of first appearance (data variables excluded)."""
        return step_references(self.prompt)

    def render(self) -> str:
        """The step as one script line, ``(id)=LLM('prompt')`` or ``(id)=CHECK('...')``; parses back to the same step (any prompt the
        parser accepts: a line inside it may not start like a step head, ``(c2)=...``).

        A prompt without backslashes is quoted with a quote it does not contain; otherwise every backslash and
        every single quote is escaped, which :func:`_unescape` undoes exactly."""
        prompt = self.prompt
        if "\\" not in prompt and "'" not in prompt:
            quoted = f"'{prompt}'"
        elif "\\" not in prompt and '"' not in prompt:
            quoted = f'"{prompt}"'
        else:
            quoted = "'" + prompt.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return f"({self.id})={self.kind}({quoted})"


def step_references(prompt: str) -> tuple[str, ...]:
    """The ``{(step_id)}`` references in ``prompt`` (data variables excluded), deduplicated, in order."""
    seen: dict[str, None] = {}
    for name in _REFERENCE.findall(prompt):
        if name not in BUILTIN_VARIABLES:
            seen.setdefault(name, None)
    return tuple(seen)


def _check_id(step_id: str, line: int) -> None:
    if not _ID_RE.match(step_id):
        raise LWTSyntaxError(
            f"invalid step id {step_id!r}: use letters, digits, '_', '.' or '-' (e.g. c1, 5.agg, final)", line
        )
    if step_id in BUILTIN_VARIABLES:
        raise LWTSyntaxError(f"step id {step_id!r} is reserved for a data variable; choose another id", line, step_id)


def _closing_quote(text: str, start: int, quote: str, call: bool) -> tuple[int, int] | None:
    """Find the quote that ends a prompt starting at ``start``: an unescaped ``quote`` followed by ``)`` (call
    form) and then only blanks up to the end of the line. Returns (quote index, end of step) or None."""
    i = start
    while True:
        i = text.find(quote, i)
        if i < 0:
            return None
        backslashes = 0
        j = i - 1
        while j >= start and text[j] == "\\":
            backslashes += 1
            j -= 1
        if backslashes % 2 == 0:
            k = i + 1
            if call:
                while k < len(text) and text[k] in " \t":
                    k += 1
                if k >= len(text) or text[k] != ")":
                    i += 1
                    continue
                k += 1
            rest = k
            while rest < len(text) and text[rest] in " \t;":
                rest += 1
            if rest >= len(text) or text[rest] in "\r\n":
                return i, rest
        i += 1


def _unescape(body: str, quote: str) -> str:
    """Undo the escapes of a quoted prompt in one left-to-right pass: ``\\\\`` is a backslash, ``\\`` before the
    quote is the quote; any other backslash is itself (``C:\\dir`` as a model writes it)."""
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body) and body[i + 1] in ("\\", quote):
            out.append(body[i + 1])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _unclosed_prompt(text: str, start: int, quote: str) -> tuple[int, int] | None:
    """For a single step whose closing quote or parenthesis is missing at the very end of the text: where the
    prompt ends (its closing quote if it is there) and the end of the text."""
    end = len(text.rstrip())
    body_end = end
    if text[start:body_end].endswith(")"):
        body_end = len(text[:body_end - 1].rstrip())
    if text[start:body_end].endswith(quote):
        body_end -= 1
    return (body_end, end) if body_end > start else None


def _parse_at(text: str, pos: int, line: int, lenient_end: bool = False) -> tuple[LWTStep, int]:
    head = _HEAD.match(text, pos)
    if head is None:
        snippet = text[pos : text.find("\n", pos) if "\n" in text[pos:] else len(text)]
        raise LWTSyntaxError(f"expected a step like (c1)=LLM('prompt') or (c1)=CHECK('path == value'), got {snippet[:120]!r}", line)
    step_id = head.group("id") or ""
    _check_id(step_id, line)
    call = head.group("call") is not None
    kind: StepKind = CHECK if head.group("call") == CHECK else LLM
    start = head.end()
    quote = text[start : start + 1]
    if quote not in ("'", '"'):
        raise LWTSyntaxError(f"step {step_id!r}: the prompt must be quoted, as {kind}('...') or {kind}(\"...\")", line, step_id)
    found = _closing_quote(text, start + 1, quote, call)
    if found is None and lenient_end:
        found = _unclosed_prompt(text, start + 1, quote)
    if found is None:
        closing = f"{quote})" if call else quote
        raise LWTSyntaxError(
            f"step {step_id!r}: unterminated prompt (no closing {closing} at the end of a line)", line, step_id
        )
    end_quote, end = found
    body = text[start + 1 : end_quote]
    if _NEXT_HEAD.search(body):  # the closing quote found belongs to a later step: this one never ended
        raise LWTSyntaxError(f"step {step_id!r}: unterminated prompt (the next step starts before it ends)", line, step_id)
    prompt = _unescape(body, quote)
    if not prompt.strip():
        raise LWTSyntaxError(f"step {step_id!r}: the prompt is empty", line, step_id)
    step = LWTStep(step_id, prompt, line, kind)
    if kind == CHECK:
        try:
            parse_check(prompt)
        except CheckError as exc:
            raise LWTSyntaxError(f"step {step_id!r}: {exc}", line, step_id) from None
    return step, end


def parse_step(text: str) -> LWTStep:
    """Parse exactly one step, as ``lwt_insert``/``lwt_set`` receive it. The argument holds one step, so a closing
    quote or parenthesis missing at its very end is tolerated (small models often drop it). Raises
    :class:`LWTSyntaxError`."""
    stripped = text.strip()
    if not stripped:
        raise LWTSyntaxError("the step is empty; write one step as (id)=LLM('prompt')")
    step, end = _parse_at(stripped, 0, 1, lenient_end=True)
    if stripped[end:].strip(" \t\r\n;"):
        raise LWTSyntaxError(f"expected exactly one step, got more after ({step.id}); insert steps one at a time")
    return step


def parse_lwt(text: str) -> list[LWTStep]:
    """Parse an LWT script into its steps, in script order.

    Blank lines, ``#`` comments and Markdown code fences are skipped. A step is ``(id)=LLM('prompt')``,
    ``(id)=LLM("prompt")``, ``(id)="prompt"`` (an LLM step) or ``(id)=CHECK('expression')``; a prompt may span lines and contain the other quote (or an
    escaped one). Raises :class:`LWTSyntaxError` naming the line for anything else, and for a duplicate id.
    """
    steps: list[LWTStep] = []
    seen: dict[str, int] = {}
    pos = 0
    counted, line = 0, 1  # line numbers counted incrementally (counting from the start each step was quadratic)
    while pos < len(text):
        if text[pos] in " \t\r\n;":
            pos += 1
            continue
        if text.startswith(("#", "```"), pos):
            newline = text.find("\n", pos)
            pos = len(text) if newline < 0 else newline + 1
            continue
        line += text.count("\n", counted, pos)
        counted = pos
        step, pos = _parse_at(text, pos, line)
        if step.id in seen:
            raise LWTSyntaxError(
                f"step id {step.id!r} is defined twice (lines {seen[step.id]} and {step.line})", step.line, step.id
            )
        seen[step.id] = step.line
        steps.append(step)
    return steps


def render_lwt(steps: Iterable[LWTStep]) -> str:
    """The script text of ``steps``, one line per step."""
    return "\n".join(step.render() for step in steps)


def unknown_references(steps: Sequence[LWTStep]) -> dict[str, tuple[str, ...]]:
    """For each step with references to undefined steps, those references (empty dict: all defined)."""
    defined = {step.id for step in steps}
    missing = {}
    for step in steps:
        unknown = tuple(ref for ref in step.references if ref not in defined)
        if unknown:
            missing[step.id] = unknown
    return missing


def execution_layers(steps: Sequence[LWTStep]) -> list[list[LWTStep]]:
    """Order ``steps`` into layers: layer 0 holds the steps without references, layer k the steps whose
    references are all in earlier layers (at least one in layer k-1). Script order is kept inside a layer.

    Raises :class:`LWTReferenceError` for references to undefined steps and :class:`LWTCycleError` for a
    dependency cycle (a step referencing itself included), each naming the steps.
    """
    ids = [step.id for step in steps]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise LWTSyntaxError(f"step id {duplicate!r} is defined twice", step_id=duplicate)
    missing = unknown_references(steps)
    if missing:
        raise LWTReferenceError(missing, ids)
    by_id = {step.id: step for step in steps}
    try:
        layers = topological_layers({step.id: step.references for step in steps})
    except DependencyCycleError as exc:
        raise LWTCycleError(exc.cycle, exc.blocked) from None
    return [[by_id[step_id] for step_id in layer] for layer in layers]


def final_step(steps: Sequence[LWTStep]) -> LWTStep:
    """The step whose output is the ranking: the one named ``final``, else the last step."""
    if not steps:
        raise LWTError("the script has no steps; add at least a (final) step")
    for step in steps:
        if step.id == FINAL_ID:
            return step
    return steps[-1]

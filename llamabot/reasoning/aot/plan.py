"""The Atom of Thought plan: atoms with explicit dependencies and ``<result_of_N>`` references. Pure.

A plan is data, not text: ``{"atoms": [{"id": 1, "kind": "tool", "name": "add", "input": {"a": 15, "b": 7}},
{"id": 2, "kind": "tool", "name": "multiply", "input": {"a": "<result_of_1>", "b": 3}, "dependsOn": [1]},
{"id": 3, "kind": "final", "name": "report", "dependsOn": [2]}]}``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

AtomKind = Literal["tool", "decision", "final"]

#: A whole-value reference to an earlier atom's result.
REFERENCE = re.compile(r"^<result_of_(\d+)>$")
#: A reference embedded in a longer string (substituted as text).
EMBEDDED_REFERENCE = re.compile(r"<result_of_(\d+)>")
#: A reference with more digits than this names no atom (and would reach Python's integer-digit limit).
MAX_REFERENCE_DIGITS = 18
#: The longest sub-question an atom may carry (``Atom.question``; the schema's ``maxLength``).
QUESTION_MAX_LENGTH = 200
#: The longest reasoning a plan may open with (``Plan.reasoning``; the schema's ``maxLength``).
REASONING_MAX_LENGTH = 400



def json_text(data: dict[str, Any], path: str | Path | None = None) -> str:
    """``data`` as indented JSON text, also written to ``path`` when one is given (plans and their records)."""
    text = json.dumps(data, indent=2)
    if path is not None:
        Path(path).write_text(text)
    return text

class Atom(BaseModel):
    """One step of a plan. ``retries`` overrides the plan's retry policy for this atom."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    id: int
    #: The sub-question this atom answers, in words (planners asked for sub-questions write it; never executed).
    question: str | None = Field(default=None, max_length=QUESTION_MAX_LENGTH)
    kind: AtomKind
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[int] = Field(default_factory=list, alias="dependsOn")
    retries: int | None = Field(default=None, ge=0, le=10)


class Plan(BaseModel):
    """An ordered list of atoms."""

    model_config = ConfigDict(extra="forbid")

    #: What the question asks and how it follows from the question's quantities, in words (planners asked to
    #: reason first write it before the atoms; never executed).
    reasoning: str | None = Field(default=None, max_length=REASONING_MAX_LENGTH)
    atoms: list[Atom]

    def atom(self, atom_id: int) -> Atom:
        for atom in self.atoms:
            if atom.id == atom_id:
                return atom
        raise KeyError(f"no atom {atom_id} in the plan")

    @property
    def final(self) -> Atom | None:
        finals = [a for a in self.atoms if a.kind == "final"]
        return finals[0] if len(finals) == 1 else None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)

    def to_json(self, path: str | Path | None = None) -> str:
        return json_text(self.to_dict(), path)

    @classmethod
    def load(cls, source: str | Path | dict[str, Any]) -> Plan:
        """A plan from a dict, JSON text or a JSON file (a bare ``{"atoms": [...]}`` as in the seed, or a saved
        AoT run with a ``plan`` key)."""
        if isinstance(source, dict):
            data = source
        else:
            text = str(source)
            data = json.loads(text if text.lstrip().startswith("{") else Path(source).read_text())
        if isinstance(data.get("plan"), dict):  # a saved run or execution record
            data = data["plan"]
        return cls.model_validate(data)


def reference_texts(value: Any) -> tuple[list[str], int]:
    """The digits of every ``<result_of_N>`` anywhere in ``value`` (nested lists and dicts, whole or embedded),
    in order, and the nesting depth of ``value`` (a scalar: 0). Iterative, so no nesting overflows the stack."""
    found: list[str] = []
    depth = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        depth = max(depth, level)
        if isinstance(item, str):
            if "<result_of_" in item:
                found.extend(EMBEDDED_REFERENCE.findall(item))
        elif isinstance(item, dict):
            stack.extend((child, level + 1) for child in reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, level + 1) for child in reversed(item))
    return found, depth


def references(value: Any) -> list[int]:
    """Every atom id referenced anywhere in ``value`` (nested lists and dicts, whole or embedded). A reference
    of more than :data:`MAX_REFERENCE_DIGITS` digits names no atom and is left out (validation reports it)."""
    return [int(digits) for digits in reference_texts(value)[0] if len(digits) <= MAX_REFERENCE_DIGITS]


def resolve(value: Any, results: dict[int, Any]) -> Any:
    """Replace references with results: a whole ``"<result_of_N>"`` becomes the value itself (any type); a
    reference inside a longer string is substituted as text. Raises KeyError for a missing result (an
    over-long reference included). Recursive: call it on validated inputs, whose nesting is bounded."""
    if isinstance(value, str):
        whole = REFERENCE.match(value)
        if whole:
            return results[_atom_id(whole.group(1))]
        if "<result_of_" in value:
            return EMBEDDED_REFERENCE.sub(lambda m: str(results[_atom_id(m.group(1))]), value)
        return value
    if isinstance(value, dict):
        return {k: resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    return value


def _atom_id(digits: str) -> int | str:
    """The atom id a reference names; an over-long one as its text (found in no results: a KeyError)."""
    return int(digits) if len(digits) <= MAX_REFERENCE_DIGITS else digits

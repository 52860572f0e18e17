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


class Atom(BaseModel):
    """One step of a plan. ``retries`` overrides the plan's retry policy for this atom."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    id: int
    kind: AtomKind
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[int] = Field(default_factory=list, alias="dependsOn")
    retries: int | None = Field(default=None, ge=0, le=10)


class Plan(BaseModel):
    """An ordered list of atoms."""

    model_config = ConfigDict(extra="forbid")

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
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            Path(path).write_text(text)
        return text

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


def references(value: Any) -> list[int]:
    """Every atom id referenced anywhere in ``value`` (nested lists and dicts, whole or embedded)."""
    found: list[int] = []
    if isinstance(value, str):
        found.extend(int(n) for n in EMBEDDED_REFERENCE.findall(value))
    elif isinstance(value, dict):
        for item in value.values():
            found.extend(references(item))
    elif isinstance(value, (list, tuple)):
        for item in value:
            found.extend(references(item))
    return found


def resolve(value: Any, results: dict[int, Any]) -> Any:
    """Replace references with results: a whole ``"<result_of_N>"`` becomes the value itself (any type); a
    reference inside a longer string is substituted as text. Raises KeyError for a missing result."""
    if isinstance(value, str):
        whole = REFERENCE.match(value)
        if whole:
            return results[int(whole.group(1))]
        if "<result_of_" in value:
            return EMBEDDED_REFERENCE.sub(lambda m: str(results[int(m.group(1))]), value)
        return value
    if isinstance(value, dict):
        return {k: resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    return value

"""Cases and datasets of the general evaluation API (:func:`llamabot.evals.evaluate`).

A :class:`Case` is one input with what is expected of it (after Inspect's ``Sample(input, target)`` and
PydanticAI's ``Case(inputs, expected_output)``); a :class:`Dataset` is a named list of them with unique ids.
:meth:`Dataset.load` reads a JSON list, a JSON object with ``"cases"``, JSON lines or a CSV with a header:

| field | also read from | what |
|---|---|---|
| ``input`` | ``question``, ``inputs`` | what the bot is called with (a mapping: keyword arguments) |
| ``expected`` | ``answer``, ``target``, ``expected_output`` | what the scorer compares the output with |
| ``id`` | ``name`` | the case's id (default: its position, from 0) |
| ``metadata`` | | anything else kept with the case |
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llamabot.errors import LlamabotError

_INPUT = ("input", "question", "inputs")
_EXPECTED = ("expected", "answer", "target", "expected_output")
_ID = ("id", "name")


class DatasetError(LlamabotError, ValueError):
    """A dataset that cannot be read as cases; the message names the file and, where known, the case."""


@dataclass(frozen=True)
class Case:
    """One input and what is expected of it (``None``: the scorer judges the output alone)."""

    id: str
    input: Any
    expected: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], position: int) -> Case:
        """A case from a dict of the fields in the module's table; ``position`` is its default id."""
        found = [key for key in _INPUT if key in row]
        if not found:
            raise DatasetError(f"case {position}: no input (one of {', '.join(_INPUT)}) in {sorted(row)}")
        ident = next((row[key] for key in _ID if row.get(key) not in (None, "")), position)
        expected = next((row[key] for key in _EXPECTED if key in row), None)
        metadata = {k: v for k, v in row.items() if k not in (*_INPUT, *_EXPECTED, *_ID)}
        return cls(str(ident), row[found[0]], expected, {**metadata.pop("metadata", {}), **metadata})

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "input": self.input, "expected": self.expected, "metadata": dict(self.metadata)}

    def version(self) -> str:
        """The sha256 of the case (id, input, expected value, metadata)."""
        return _sha256(self.to_dict())


@dataclass
class Dataset:
    """Cases with unique ids, in order, and the dataset's name (its file's stem when loaded)."""

    cases: list[Case]
    name: str = "dataset"

    def __post_init__(self) -> None:
        self.cases = [c if isinstance(c, Case) else Case.from_row(c, i) for i, c in enumerate(self.cases)]
        seen: set[str] = set()
        for case in self.cases:
            if case.id in seen:
                raise DatasetError(f"{self.name}: the case id {case.id!r} is used twice")
            seen.add(case.id)

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    def version(self) -> str:
        """The sha256 of the cases (ids, inputs, expected values), so that a report names what it ran on."""
        return _sha256([c.to_dict() for c in self.cases])

    def describe(self) -> dict[str, Any]:
        """The dataset's block of a report: name, number of cases and version."""
        return {"name": self.name, "cases": len(self.cases), "version": self.version()}

    @classmethod
    def load(cls, path: str | Path, *, limit: int | None = None) -> Dataset:
        """The cases of a ``.json``, ``.jsonl`` or ``.csv`` file (the first ``limit`` of them). Raises
        :class:`DatasetError` naming the file (and the line of a JSON-lines file that does not parse)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise DatasetError(f"cannot read the dataset {path}: {exc}") from exc
        rows = list(_rows(path, text))
        try:
            cases = [Case.from_row(row, i) for i, row in enumerate(rows[:limit])]
            return cls(cases, path.stem)
        except DatasetError as exc:
            raise DatasetError(f"{path}: {exc}") from exc


def _sha256(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _rows(path: Path, text: str) -> Iterable[Mapping[str, Any]]:
    if path.suffix.lower() == ".csv":
        return csv.DictReader(text.splitlines())
    if path.suffix.lower() == ".jsonl":
        return read_jsonl(path, text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: {exc}") from exc
    return _mappings(path, data.get("cases") if isinstance(data, dict) else data)


def read_jsonl(path: Path, text: str | None = None, error: type[LlamabotError] = DatasetError) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file (blank lines skipped); ``error`` names the file, and the line of one that
    is not a JSON object."""
    if text is None:
        if not path.is_file():
            raise error(f"{path}: file not found")
        text = path.read_text(encoding="utf-8")
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}, line {number}: not valid JSON: {exc}") from exc
        if not isinstance(record, dict):
            raise error(f"{path}, line {number}: expected a JSON object")
        records.append(record)
    return records


def _mappings(path: Path, rows: Any) -> list[Mapping[str, Any]]:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DatasetError(f"{path}: expected a list of objects (or an object with \"cases\")")
    return rows

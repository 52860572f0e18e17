"""Every requirement of the design docs is traced to a test that exists, and the design docs stay small.

A requirement is a table row of a ``docs/design/**/*-EARS.md`` file whose first cell is its ID
(``AGT-GRAPH-010``, ``TOT-MACH-140``, ``API-OPT-025``). The tests that prove it are

- every ``tests/<path>.py::<name>`` written in the row: each must exist; ``<name>`` may carry pytest's
  parameter id (``test_x[case]`` names ``test_x``) or end in ``*`` (every test whose name starts so);
- the tests named after the ID (``test_agt_graph_010`` or ``test_agt_graph_010_<what it shows>``) in the test
  files (``tests/<path>.py``) that the headings above the row name, the nearest heading of each level.

Each ID must reach at least one test. Test functions are read from the files with :mod:`ast` (nothing is
imported), methods of test classes included.

The design docs describe the design as it is; dated measurements live in ``benchmarks/results/HISTORY.md`` and
evaluation reports in ``benchmarks/results/``. :data:`BUDGET` bounds ``docs/design/**/*.md``.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design"
EARS = sorted(DESIGN.rglob("*-EARS.md"))

#: The most bytes ``docs/design/**/*.md`` may hold together (issue #35).
BUDGET = 250_000

REQUIREMENT_ROW = re.compile(r"^\|\s*([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-\d{3}[a-z]?)\s*\|(.*)$")
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
TEST_FILE = re.compile(r"(tests/[\w./-]+?\.py)(?![\w:])")
TEST_REF = re.compile(r"(tests/[\w./-]+?\.py)::(\w+\*?)(?:\[[^\]|`]*\])?")


@cache
def functions_in(path: str, root: Path = ROOT) -> frozenset[str]:
    """The test functions of ``path`` (relative to ``root``), empty when the file does not exist."""
    file = root / path
    if not file.is_file():
        return frozenset()
    tree = ast.parse(file.read_text(encoding="utf-8"), filename=path)
    return frozenset(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
    )


def matches(name: str, names: frozenset[str]) -> set[str]:
    if name.endswith("*"):
        return {n for n in names if n.startswith(name[:-1])}
    return {name} & names


def requirements(ears: Path) -> dict[str, dict]:
    """ID -> the test files its headings name, the ``path::name`` references of its rows, its line numbers."""
    found: dict[str, dict] = {}
    headings: dict[int, str] = {}
    for number, line in enumerate(ears.read_text(encoding="utf-8").splitlines(), start=1):
        if heading := HEADING.match(line):
            level = len(heading.group(1))
            headings = {lvl: text for lvl, text in headings.items() if lvl < level}
            headings[level] = heading.group(2)
            continue
        if not (row := REQUIREMENT_ROW.match(line)):
            continue
        entry = found.setdefault(row.group(1), {"files": set(), "refs": [], "lines": []})
        entry["files"] |= {f for text in headings.values() for f in TEST_FILE.findall(text)}
        entry["refs"] += TEST_REF.findall(row.group(2))
        entry["lines"].append(number)
    return found


def proving_tests(requirement: str, entry: dict, root: Path = ROOT) -> tuple[set[str], list[str]]:
    """The tests that prove ``requirement`` as ``path::name``, and the references that name no test."""
    proved: set[str] = set()
    broken: list[str] = []
    for path, name in entry["refs"]:
        hits = matches(name, functions_in(path, root))
        if not hits:
            broken.append(f"{path}::{name}")
        proved |= {f"{path}::{hit}" for hit in hits}
    named_after = "test_" + requirement.lower().replace("-", "_")
    for path in entry["files"]:
        proved |= {
            f"{path}::{n}"
            for n in functions_in(path, root)
            if n == named_after or n.startswith(named_after + "_")
        }
    return proved, broken


def where(ears: Path) -> str:
    return ears.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("ears", EARS, ids=lambda p: p.relative_to(DESIGN).as_posix())
def test_every_requirement_names_a_test_that_exists(ears):
    found = requirements(ears)
    assert found, f"{where(ears)} has no requirement rows (| ID | ... |)"
    problems = []
    for requirement, entry in found.items():
        proved, broken = proving_tests(requirement, entry)
        lines = ",".join(map(str, entry["lines"]))
        if broken:
            problems.append(
                f"{requirement} (line {lines}) names tests that do not exist: {', '.join(broken)}"
            )
        if not proved:
            problems.append(
                f"{requirement} (line {lines}) reaches no test: name one as tests/<file>.py::<test> in its row, "
                f"or name the file holding test_{requirement.lower().replace('-', '_')}_* in its section heading"
            )
    assert not problems, f"{where(ears)}:\n" + "\n".join(problems)


def test_the_traceability_reader_follows_headings_references_and_parameters(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "import pytest\n\n\ndef test_doc_trace_010_shows_it():\n    pass\n\n\n"
        "class TestGroup:\n    @pytest.mark.parametrize('n', [1])\n    async def test_param(self, n):\n        pass\n",
        encoding="utf-8",
    )
    ears = tmp_path / "x-EARS.md"
    ears.write_text(
        "# X\n## Part (`tests/test_x.py`)\n| ID | Requirement |\n|---|---|\n| DOC-TRACE-010 | one |\n"
        "### Sub\n| DOC-TRACE-020 | two, `tests/test_x.py::test_param[1]`, `tests/test_x.py::test_doc*` |\n"
        "## Other\n| DOC-TRACE-010 | again |\n| DOC-TRACE-030 | `tests/test_x.py::test_gone` |\n",
        encoding="utf-8",
    )
    found = requirements(ears)
    assert found["DOC-TRACE-010"]["files"] == {"tests/test_x.py"}
    assert found["DOC-TRACE-010"]["lines"] == [5, 9]
    assert found["DOC-TRACE-030"]["files"] == set()
    prove = {r: proving_tests(r, e, tmp_path) for r, e in found.items()}
    assert prove["DOC-TRACE-010"] == ({"tests/test_x.py::test_doc_trace_010_shows_it"}, [])
    assert prove["DOC-TRACE-020"] == (
        {"tests/test_x.py::test_param", "tests/test_x.py::test_doc_trace_010_shows_it"},
        [],
    )
    assert prove["DOC-TRACE-030"] == (set(), ["tests/test_x.py::test_gone"])


def test_the_design_docs_stay_within_their_budget():
    sizes = {p.relative_to(DESIGN).as_posix(): p.stat().st_size for p in DESIGN.rglob("*.md")}
    total = sum(sizes.values())
    largest = ", ".join(f"{name} {size:,}" for name, size in sorted(sizes.items(), key=lambda i: -i[1])[:5])
    assert total <= BUDGET, (
        f"docs/design/**/*.md hold {total:,} bytes, over the {BUDGET:,} budget (largest: {largest}): "
        "move dated measurements to benchmarks/results/HISTORY.md and reports to benchmarks/results/"
    )

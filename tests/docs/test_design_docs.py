"""The Python blocks of the design docs (``docs/design/**/*.md``) run, or are named as not meant to run.

Each block is one of three kinds, decided per block:

- **run** (the default): the blocks of one file run in order in one namespace, on the tour world of
  ``conftest.py`` (the scripted tour model as the default model, the fixture files in the working directory),
  as the README's do. A new block is picked up by itself.
- **sketch** (:data:`SKETCHES`): a class outline (``class RunHooks: def on_start(self, span, state): ...``) that
  shows a public class's interface; every method it shows must exist on that class with the same parameters.
- **fragment** (:data:`FRAGMENTS`): lines lifted from inside the code, or the forms of a decorator, not a
  program; listed with the reason it cannot run.

A block neither run cleanly nor listed fails, and so does a listed block the docs no longer have: list a new
fragment in :data:`FRAGMENTS` (file relative to ``docs/design``, the block's first line, why it cannot run).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from tests.docs.notebook import Block, Notebook, blocks_of

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design"
BLOCKS = [block for path in sorted(DESIGN.rglob("*.md")) for block in blocks_of(path, "python")]

#: Blocks that are not programs: (file relative to docs/design, first line of the block) -> why not run.
FRAGMENTS: dict[tuple[str, str], str] = {
    ("durable/LLD.md", "steps = _STEPS.get()"):
        "three lines from inside the exchange's driver (_STEPS, exchange, model and on_token are its locals)",
    ("tools/LLD.md", '@tool                                   # loopback_name="decide": after it runs, the graph '
                     "returns to the decision"):
        "the forms of @tool side by side; the last decorator has no function under it",
}

#: Outlines of a public class: (file, first line) -> the class ("module:name") whose methods they show.
SKETCHES: dict[tuple[str, str], str] = {
    ("high-level-design.md", "class RunHooks:"): "llamabot.observe.hooks:RunHooks",
}


def key(block: Block) -> tuple[str, str]:
    return block.path.relative_to(DESIGN).as_posix(), block.first_line


def where(block: Block) -> str:
    return f"docs/design/{block.path.relative_to(DESIGN).as_posix()}:{block.line}"


RUN = [b for b in BLOCKS if key(b) not in FRAGMENTS and key(b) not in SKETCHES]
SKETCHED = [b for b in BLOCKS if key(b) in SKETCHES]


@pytest.fixture(scope="module")
def notebooks(tour_world):
    """One notebook per design doc, made on its first block."""
    made: dict[Path, Notebook] = {}
    yield made
    for notebook in made.values():
        notebook.close()


@pytest.mark.parametrize("index", range(len(RUN)), ids=[where(b) for b in RUN])
def test_design_doc_python_block_runs(notebooks, index):
    block = RUN[index]
    earlier = [b for b in RUN[:index] if b.path == block.path]
    if block.path not in notebooks:  # run alone (-k): the file's earlier blocks first
        notebooks[block.path] = Notebook()
        for before in earlier:
            notebooks[block.path].run(before)
    notebooks[block.path].run(block)


@pytest.mark.parametrize("index", range(len(SKETCHED)), ids=[where(b) for b in SKETCHED])
def test_design_doc_sketch_matches_its_class(index):
    block = SKETCHED[index]
    module, name = SKETCHES[key(block)].split(":")
    real = getattr(importlib.import_module(module), name)
    outline = next(n for n in ast.parse(block.code).body if isinstance(n, ast.ClassDef))
    assert outline.name == name, f"{where(block)} outlines {outline.name}, not {SKETCHES[key(block)]}"
    for method in (n for n in outline.body if isinstance(n, ast.FunctionDef)):
        shown = [a.arg for a in method.args.args]
        assert hasattr(real, method.name), f"{where(block)}: {name} has no method {method.name}"
        actual = list(inspect.signature(getattr(real, method.name)).parameters)
        assert shown == actual, f"{where(block)}: {name}.{method.name}{tuple(shown)} is {tuple(actual)} in the code"


@pytest.mark.parametrize("listed", [*FRAGMENTS, *SKETCHES], ids=lambda k: f"{k[0]}:{k[1][:30]}")
def test_design_doc_listed_block_is_still_in_the_docs(listed):
    assert listed in {key(b) for b in BLOCKS}, f"{listed} is no longer a python block of docs/design: unlist it"


def test_design_doc_fragments_say_why_they_do_not_run():
    assert all(reason.strip() for reason in FRAGMENTS.values())

"""The notebooks under notebooks/ run top to bottom, are committed with their outputs, and choose their model in
one cell.

Requirement AGT-NB-010: When the test suite runs, every notebook in ``notebooks/`` shall execute without a cell
error on its default model, the scripted tour model (in the test environment's own Python, in ``notebooks/``).
Requirement AGT-NB-020: One notebook (``agentbot.ipynb``) shall execute without a cell error on the embedded
local model, chosen through ``$LLAMABOT_NOTEBOOK_MODEL``.
Requirement AGT-NB-030: Every notebook shall be committed with the outputs of a run (``scripts/run_notebooks.py``):
every code cell executed, in order, without an error output.
Requirement AGT-NB-040: Every notebook shall choose its model in one code cell, its first, with
``choose_model("scripted")``; no other code cell names a model.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from scripts.run_notebooks import execute, notebooks

NOTEBOOKS = notebooks()
IDS = [p.name for p in NOTEBOOKS]


def code_cells(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def errors(notebook: nbformat.NotebookNode) -> list[dict]:
    return [o for cell in code_cells(notebook) for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def test_notebooks_exist():
    assert NOTEBOOKS, "no notebooks found under notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_agt_nb_010_notebook_executes_on_the_scripted_model(path: Path):
    notebook = execute(path)  # raises CellExecutionError (with the cell's traceback) on the first failing cell
    assert not errors(notebook)


@pytest.mark.local_model
def test_agt_nb_020_notebook_executes_on_the_embedded_model(local_model_name: str):
    notebook = execute(Path(__file__).resolve().parents[1] / "notebooks" / "agentbot.ipynb", model=local_model_name)
    assert not errors(notebook)
    assert repr(local_model_name) in str(code_cells(notebook)[0].outputs)  # the choice cell showed the real model


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_agt_nb_030_notebook_is_committed_with_its_outputs(path: Path):
    cells = code_cells(nbformat.read(path, as_version=4))
    counts = [cell.execution_count for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: not committed as run top to bottom (execution counts {counts}): "
        f"python scripts/run_notebooks.py {path.name}")
    assert not errors(nbformat.read(path, as_version=4))
    assert "ScriptedModel(name='scripted'" in str(cells[0].outputs), f"{path.name}: outputs not from the scripted model"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_agt_nb_040_notebook_chooses_its_model_in_its_first_code_cell(path: Path):
    cells = code_cells(nbformat.read(path, as_version=4))
    assert re.search(r'^MODEL = choose_model\("scripted"\)', cells[0].source, re.MULTILINE), cells[0].source
    named = [cell.source for cell in cells[1:] if re.search(r"choose_model|[\"']local/", cell.source)]
    assert not named, f"{path.name}: only the first code cell chooses the model: {named}"

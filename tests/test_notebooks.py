"""The notebooks under notebooks/ run top to bottom on the embedded local model.

Requirement AGT-NB-010: When the test suite runs, every notebook in ``notebooks/`` shall execute without a cell
error on the embedded local model (in the test environment's own Python).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "python3"


def kernel_manager() -> KernelManager:
    """A ``python3`` kernel running this very interpreter (the environment with llamabot installed).

    The spec manager searches no kernel directories, so a ``python3`` spec installed elsewhere on the machine
    (which may name another Python) is never used: jupyter_client falls back to ipykernel's built-in spec,
    whose command is ``sys.executable -m ipykernel_launcher``. Nothing is registered anywhere.
    """
    manager = KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    assert manager.kernel_spec.argv[0] == sys.executable, manager.kernel_spec.argv
    return manager


def test_notebooks_exist():
    assert NOTEBOOKS, "no notebooks found under notebooks/"


@pytest.mark.local_model
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_agt_nb_010_notebooks_execute_on_the_embedded_model(path: Path, local_model_name: str):
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name=KERNEL,
        km=kernel_manager(),
        resources={"metadata": {"path": str(ROOT)}},
    )
    client.execute()  # raises CellExecutionError (with the cell's traceback) on the first failing cell
    errors = [o for cell in notebook.cells for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors

"""Execute the notebooks under ``notebooks/`` and save them with their outputs (what is committed).

    python scripts/run_notebooks.py                  # every notebook, on the scripted model (the default)
    python scripts/run_notebooks.py aot.ipynb        # some of them
    python scripts/run_notebooks.py --model local/qwen2.5-coder-1.5b agentbot.ipynb   # on another model

Each notebook runs as Jupyter runs it: in a kernel of this interpreter, in ``notebooks/``. The committed outputs
come from the scripted model; ``--model`` (``$LLAMABOT_NOTEBOOK_MODEL``) is for trying a notebook on a real model.
``tests/test_notebooks.py`` executes them the same way (:func:`execute`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
KERNEL = "python3"


def notebooks() -> list[Path]:
    """The notebooks, by name."""
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def kernel_manager() -> KernelManager:
    """A ``python3`` kernel running this very interpreter (the environment with llamabot installed).

    The spec manager searches no kernel directories, so a ``python3`` spec installed elsewhere on the machine
    (which may name another Python) is never used: jupyter_client falls back to ipykernel's built-in spec,
    whose command is ``sys.executable -m ipykernel_launcher``. Nothing is registered anywhere.
    """
    manager = KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    assert manager.kernel_spec.argv[0] == sys.executable, manager.kernel_spec.argv
    return manager


def execute(path: Path, model: str | None = None, timeout: int = 600) -> nbformat.NotebookNode:
    """The notebook at ``path``, executed top to bottom in ``notebooks/``; raises ``CellExecutionError`` (with the
    cell's traceback) on the first failing cell. ``model``: the kernel's ``$LLAMABOT_NOTEBOOK_MODEL``; ``None``
    leaves it unset, so the notebook's own choice (the scripted model) holds."""
    env = {k: v for k, v in os.environ.items() if k != "LLAMABOT_NOTEBOOK_MODEL"}
    if model is not None:
        env["LLAMABOT_NOTEBOOK_MODEL"] = model
    notebook, manager = nbformat.read(path, as_version=4), kernel_manager()
    client = NotebookClient(notebook, timeout=timeout, kernel_name=KERNEL, km=manager,
                            record_timing=False, resources={"metadata": {"path": str(NOTEBOOKS)}})
    try:
        client.execute(env=env)  # the kernel process's whole environment
    finally:  # nbclient leaves a kernel it was given running
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)
    return notebook


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="notebook file names (default: all)")
    parser.add_argument("--model", help="the model to run on (default: each notebook's choice, the scripted model)")
    args = parser.parse_args(argv)
    paths = [NOTEBOOKS / name for name in args.names] or notebooks()
    for path in paths:
        nbformat.write(execute(path, args.model), path)
        print(f"{path.name}: executed and saved")
    return 0


if __name__ == "__main__":
    sys.exit(main())

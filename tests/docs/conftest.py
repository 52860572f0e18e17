"""The world the documentation's code blocks run in: the tour model as the default model (through the public
mechanism a user has: ``register_scripted_provider`` and ``$LLAMABOT_MODEL``), a fresh SQLite database for
durable runs (``$LLAMABOT_DB``), the fixture modules of ``tests/fixtures/readme`` importable (``myapp``,
``mypkg``), ``python`` on the ``PATH`` being this interpreter, and a temporary working directory holding copies
of the files the blocks name (``server.py``, ``data.json``, ``game24.csv``)."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from llamabot.models.scripted import ScriptedModel
from tests.docs.tour_model import tour_model

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "readme"


@dataclass(frozen=True)
class TourWorld:
    """The tour model every default-model bot reaches, and the working directory the blocks run in."""

    model: ScriptedModel
    workdir: Path


@pytest.fixture(scope="module")
def tour_world(tmp_path_factory):
    from llamabot.models.scripted_provider import register_scripted_provider

    workdir = tmp_path_factory.mktemp("docs")
    for name in ("server.py", "data.json", "game24.csv"):
        shutil.copy(FIXTURES / name, workdir / name)
    model = tour_model()
    patch = pytest.MonkeyPatch()
    patch.setenv("LLAMABOT_MODEL", register_scripted_provider(model, prefix="readme-tour"))
    patch.setenv("LLAMABOT_DB", f"sqlite:///{workdir / 'runs.sqlite'}")
    patch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    patch.setenv("COLUMNS", "200")
    patch.syspath_prepend(str(FIXTURES))
    patch.chdir(workdir)
    try:
        yield TourWorld(model, workdir)
    finally:
        from llamabot.durable import shutdown

        shutdown()
        patch.undo()

"""Fixtures of the durable tests: a SQLite file per test, one real PostgreSQL server per session, and the
process-wide durable runtime stopped after every test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.durable.postgres import postgres_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def postgres_url():
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path):
    """Each test that takes ``db_url`` runs on SQLite and on PostgreSQL (a fresh database each time)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.sqlite'}"
    base = request.getfixturevalue("postgres_url")
    return base.rsplit("/", 1)[0] + "/t" + os.urandom(6).hex()


@pytest.fixture(autouse=True)
def stop_runtime():
    yield
    from llamabot.durable import shutdown

    shutdown()


@pytest.fixture
def files(tmp_path, monkeypatch):
    """Side-effect and model-call logs for the test bots (also passed to subprocesses through the env)."""
    effects, model_log = tmp_path / "effects.txt", tmp_path / "model.txt"
    monkeypatch.setenv("DURABLE_EFFECTS", str(effects))
    monkeypatch.setenv("DURABLE_MODEL_LOG", str(model_log))
    return effects, model_log


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


PYTHON = sys.executable

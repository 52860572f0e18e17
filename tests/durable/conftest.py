"""Fixtures of the durable tests: a SQLite file per test, one real PostgreSQL server per session, and the
process-wide durable runtime stopped after every test."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
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


def wait_until_waiting(db: str, run_id: str, process: subprocess.Popen | None = None, stderr: Path | None = None,
                       timeout: float = 90.0) -> dict:
    """The pending approval of run ``run_id`` once it waits for one. When ``process`` (the run's process) exits
    first, fail at once with its exit code and the end of its ``stderr`` file, not after the timeout."""
    from llamabot.durable import UnknownRunError, show_run

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(UnknownRunError):  # the run's process may not have started it yet
            info = show_run(run_id, db)
            if info.waiting:
                return info.waiting
        if process is not None and process.poll() is not None:
            err = stderr.read_text()[-4000:] if stderr is not None else "(stderr not kept)"
            raise AssertionError(f"the process of run {run_id} exited ({process.returncode}) before the run "
                                 f"waited:\n{err}")
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never waited for an approval within {timeout:.0f} s")

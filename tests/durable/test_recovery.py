"""Crash recovery: a run killed with SIGKILL after some tool calls resumes in a new process from its last
completed step, with the same answer, each side effect once and no completed model call sent again."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter

from tests.durable.conftest import PYTHON, subprocess_env

QUERY = "crash-me"
EXPECTED = f"{QUERY} -> recorded 1; recorded 2; recorded 3; recorded 4"


def _start(db: str, run_id: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, "-m", "tests.durable.run_agent", db, run_id, QUERY],
                            env=subprocess_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path, line: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and line in path.read_text().splitlines():
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {line!r}: {proc.stderr.read()}")
        time.sleep(0.02)
    raise AssertionError(f"{line!r} never appeared in {path}")


def test_dur_rec_010_sigkill_after_tool_calls_resumes_without_repeating_anything(db_url, files):
    """DUR-REC-010/020/030 on SQLite and PostgreSQL."""
    effects, model_log = files
    env = {"DURABLE_CALLS": "4", "DURABLE_LATENCY_S": "0.4"}
    first = _start(db_url, "run-crash", **env)
    _wait_for(model_log, f"{QUERY}|start 3", first)  # three tool calls done, the fourth decision in flight
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert effects.read_text().splitlines() == [f"{QUERY}|1", f"{QUERY}|2", f"{QUERY}|3"]

    second = _start(db_url, "run-crash", **env)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["result"] == EXPECTED
    assert effects.read_text().splitlines() == [f"{QUERY}|{i}" for i in range(1, 5)]  # each side effect once
    calls = Counter(model_log.read_text().splitlines())
    assert all(calls[f"{QUERY}|end {n}"] == 1 for n in range(5)), calls  # every completed call sent once
    assert calls[f"{QUERY}|start 3"] == 2  # only the call cut off by the kill was sent again

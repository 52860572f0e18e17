"""Exit is not failure: a process that ends (normally, on Ctrl-C) with a durable run in flight lets the step in
flight finish, leaves the run PENDING with no error, and the next process on the database finishes it."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter

import pytest

from llamabot.durable import show_run
from tests.durable.conftest import PYTHON, subprocess_env
from tests.durable.test_recovery import _wait_for

QUERY = "exit-me"
EXPECTED = f"{QUERY} -> recorded 1; recorded 2; recorded 3"


def _finish(db: str, run_id: str, **env: str) -> str:
    """Run ``run_id`` again in a new process (same default executor id): it resumes and returns the answer."""
    done = subprocess.run([PYTHON, "-m", "tests.durable.run_agent", db, run_id, QUERY], env=subprocess_env(**env),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])["result"]


def test_dur_exit_010_a_script_that_ends_leaves_its_run_pending_and_the_next_process_finishes_it(db_url, files):
    """DUR-EXIT-010, DUR-EXIT-030 on SQLite and PostgreSQL: the script ends while a model call is in flight;
    the call finishes within the grace period and is recorded (never sent again), the run stays PENDING without
    an error, and a new process finishes it with the right answer, each side effect once."""
    effects, model_log = files
    env = {"DURABLE_LATENCY_S": "0.5"}
    started = time.monotonic()
    done = subprocess.run([PYTHON, "-m", "tests.durable.start_and_exit", db_url, "run-exit", QUERY,
                           f"{QUERY}|start 1"], env=subprocess_env(**env), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "exiting" in done.stdout and "cannot schedule new futures" not in done.stderr
    assert time.monotonic() - started < 30
    run = show_run("run-exit", db_url)
    assert (run.status, run.error) == ("PENDING", None)
    assert [name for _, name in run.steps] == ["model:conversation", "tool:record", "model:conversation"]

    assert _finish(db_url, "run-exit", **env) == EXPECTED
    assert show_run("run-exit", db_url).status == "SUCCESS"
    assert effects.read_text().splitlines() == [f"{QUERY}|{i}" for i in (1, 2, 3)]
    calls = Counter(model_log.read_text().splitlines())
    assert all(calls[f"{QUERY}|start {n}"] == calls[f"{QUERY}|end {n}"] == 1 for n in range(4)), calls


def test_dur_exit_020_ctrl_c_leaves_the_run_pending(tmp_path, files):
    """DUR-EXIT-020: Ctrl-C (SIGINT) in a process blocked in ``Durable.run``: the run stays PENDING, not failed,
    and its model call in flight is not sent again."""
    effects, model_log = files
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    env = {"DURABLE_LATENCY_S": "0.5"}
    proc = subprocess.Popen([PYTHON, "-m", "tests.durable.run_agent", db, "run-int", QUERY],
                            env=subprocess_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(model_log, f"{QUERY}|start 1", proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    run = show_run("run-int", db)
    assert (run.status, run.error) == ("PENDING", None)
    assert _finish(db, "run-int", **env) == EXPECTED
    assert effects.read_text().splitlines() == [f"{QUERY}|{i}" for i in (1, 2, 3)]
    assert Counter(model_log.read_text().splitlines())[f"{QUERY}|start 1"] == 1


def test_dur_exit_040_a_step_longer_than_the_grace_period_is_cut_and_sent_again(tmp_path, files):
    """DUR-EXIT-040: with ``LLAMABOT_DURABLE_GRACE_S=1`` a 4 s model call does not hold the exit: the process
    ends after about a second, the run stays PENDING, and the call cut off is sent again on recovery (the only
    call sent twice)."""
    effects, model_log = files
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    proc = subprocess.Popen([PYTHON, "-m", "tests.durable.start_and_exit", db, "run-cut", QUERY, f"{QUERY}|start 1"],
                            env=subprocess_env(DURABLE_LATENCY_S="4", LLAMABOT_DURABLE_GRACE_S="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(model_log, f"{QUERY}|start 1", proc)
    in_flight = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert time.monotonic() - in_flight < 3.5  # the grace (1 s) and the shutdown, not the call's 4 s
    assert f"{QUERY}|end 1" not in model_log.read_text().splitlines()
    assert show_run("run-cut", db).status == "PENDING"
    assert _finish(db, "run-cut", DURABLE_LATENCY_S="0") == EXPECTED
    calls = Counter(model_log.read_text().splitlines())
    assert calls[f"{QUERY}|start 1"] == 2 and all(calls[f"{QUERY}|start {n}"] == 1 for n in (0, 2, 3)), calls
    assert effects.read_text().splitlines() == [f"{QUERY}|{i}" for i in (1, 2, 3)]


def test_dur_exit_050_asyncio_run_ending_with_a_run_in_flight_leaves_it_pending(tmp_path, files):
    """DUR-EXIT-050: ``asyncio.run(main())`` returns while a run started with ``astart`` has a model call in
    flight: asyncio cancels the run's task (its step in flight is cut), and the run stays PENDING without an
    error; the next process finishes it, the cut call being the only one sent twice."""
    effects, model_log = files
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    done = subprocess.run([PYTHON, "-m", "tests.durable.start_and_exit", db, "run-async", QUERY, f"{QUERY}|start 1",
                           "async"], env=subprocess_env(DURABLE_LATENCY_S="0.5"), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    run = show_run("run-async", db)
    assert (run.status, run.error) == ("PENDING", None)
    assert _finish(db, "run-async", DURABLE_LATENCY_S="0") == EXPECTED
    calls = Counter(model_log.read_text().splitlines())
    assert calls[f"{QUERY}|start 1"] == 2 and all(calls[f"{QUERY}|end {n}"] == 1 for n in range(4)), calls
    assert effects.read_text().splitlines() == [f"{QUERY}|{i}" for i in (1, 2, 3)]


WAIT_THEN_EXIT = """
import sys, time
from llamabot.durable import Durable, show_run, shutdown
db, how = sys.argv[1:3]
Durable("tests.durable.agents:make_approval_agent", db=db).start("pay erin", run_id="wait-1")
deadline = time.monotonic() + 30
while not show_run("wait-1", db).waiting and time.monotonic() < deadline:
    time.sleep(0.05)
if how == "shutdown":
    shutdown()
print("exiting", flush=True)
"""


@pytest.mark.parametrize("how", ["shutdown", "exit"])
def test_dur_exit_060_a_process_with_a_run_waiting_for_an_approval_exits(tmp_path, files, how):
    """DUR-EXIT-060: a process whose run waits for an approval ends (after ``shutdown()``, or at once through the
    exit hook): it exits promptly, and the run stays PENDING, still waiting. ``shutdown()`` stopped DBOS's event
    loop before the parked run's result reached the thread executing it, and Python waited for that thread at exit
    forever."""
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    started = time.monotonic()
    done = subprocess.run([PYTHON, "-c", WAIT_THEN_EXIT, db, how], env=subprocess_env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "exiting" in done.stdout, done.stderr
    assert time.monotonic() - started < 30
    run = show_run("wait-1", db)
    assert (run.status, run.error, run.waiting["tool"]) == ("PENDING", None, "transfer")

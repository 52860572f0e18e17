"""Graceful stop of ``llamabot worker`` on SIGTERM: it stops dequeuing, lets the steps in flight finish within the
grace period, leaves the rest PENDING (never ERROR) and exits 0; a live worker with another id goes on."""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter

from llamabot.durable import Durable, list_runs, wait_result
from llamabot.durable.runs import client
from tests.durable.conftest import PYTHON, subprocess_env
from tests.durable.postgres import free_port
from tests.durable.workers import Worker, enqueue_runs

LIVENESS = {"LLAMABOT_DURABLE_HEARTBEAT_S": "1", "LLAMABOT_DURABLE_ORPHAN_S": "3"}


def _starts(model_log) -> int:
    lines = model_log.read_text().splitlines() if model_log.exists() else []
    return sum("|start " in line for line in lines)


def _wait_for_starts(model_log, count: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while _starts(model_log) < count:
        assert proc.poll() is None and time.monotonic() < deadline, f"{count} model calls never started"
        time.sleep(0.02)


def test_dur_stop_010_sigterm_lets_the_steps_in_flight_finish_and_a_live_worker_goes_on(postgres_url, files,
                                                                                        tmp_path):
    """DUR-STOP-010, DUR-ORPH-020: SIGTERM while four model calls are in flight: the worker exits 0 once they
    are recorded, took no new run from the queue, left its runs PENDING; a worker with a new id recovers them at
    once (the stopped worker marked itself gone) and every run finishes, each side effect and model call once."""
    effects, model_log = files
    db = postgres_url.rsplit("/", 1)[0] + "/graceful"
    env = {"DURABLE_CALLS": "2", "DURABLE_LATENCY_S": "1", **LIVENESS}
    first = Worker(db, "first", tmp_path / "first.log", concurrency=4, **env)
    ids = enqueue_runs(db, 12, "g")
    _wait_for_starts(model_log, 4, first.proc)
    stopped = time.monotonic()
    assert first.stop(signal.SIGTERM) == 0, first.text()
    assert time.monotonic() - stopped < 8  # the calls in flight (1 s), not the runs (3 s each) or the queue
    assert "worker stopping: 4 runs executing, grace 20 s" in first.text() and "worker stopped" in first.text()
    log = Counter(model_log.read_text().splitlines())
    assert all(log[line.replace("|start ", "|end ")] == 1 for line in log if "|start " in line), log
    runs = list_runs(db, limit=100)
    assert not [r for r in runs if r.status not in ("SUCCESS", "PENDING", "ENQUEUED")], runs
    parked = [r for r in runs if r.status == "PENDING"]
    assert 1 <= len(parked) <= 4 and all(r.executor == "first" and r.error is None for r in parked)

    second = Worker(db, "second", tmp_path / "second.log", concurrency=4, **env)
    try:
        with client(db) as via:
            results = {run_id: wait_result(run_id, via=via) for run_id in ids}
    finally:
        assert second.stop(signal.SIGTERM) == 0
    assert results == {i: f"{i} -> recorded 1; recorded 2" for i in ids}
    assert {f"recovered run {r.run_id} of dead executor first" for r in parked} <= set(second.text().splitlines())
    assert Counter(effects.read_text().splitlines()) == Counter({f"{i}|{step}": 1 for i in ids for step in (1, 2)})
    ends = Counter(line for line in model_log.read_text().splitlines() if "|end " in line)
    assert set(ends.values()) == {1} and len(ends) == 3 * len(ids)


def test_dur_stop_020_a_step_longer_than_the_grace_period_does_not_hold_the_worker(postgres_url, files, tmp_path):
    """DUR-STOP-020: ``llamabot worker --grace 1`` (over ``LLAMABOT_DURABLE_GRACE_S=30``) and 6 s model calls:
    SIGTERM stops the worker after about a second, exit 0, its runs PENDING without an error."""
    _, model_log = files
    db = postgres_url.rsplit("/", 1)[0] + "/grace"
    worker = Worker(db, "slow", tmp_path / "slow.log", 2, "--grace", "1", DURABLE_LATENCY_S="6",
                    LLAMABOT_DURABLE_GRACE_S="30", **LIVENESS)
    enqueue_runs(db, 2, "s")
    _wait_for_starts(model_log, 2, worker.proc)
    stopped = time.monotonic()
    assert worker.stop(signal.SIGTERM) == 0, worker.text()
    assert time.monotonic() - stopped < 4.5
    assert "grace 1 s" in worker.text()
    assert [(r.status, r.error) for r in list_runs(db)] == [("PENDING", None)] * 2


def test_dur_stop_030_a_second_sigterm_stops_waiting(postgres_url, files, tmp_path):
    """DUR-STOP-030: a second SIGTERM during the grace period (20 s here) ends the wait: exit 0 at once, the runs
    PENDING without an error."""
    _, model_log = files
    db = postgres_url.rsplit("/", 1)[0] + "/hurry"
    worker = Worker(db, "hurried", tmp_path / "hurried.log", concurrency=2, DURABLE_LATENCY_S="10", **LIVENESS)
    enqueue_runs(db, 2, "h")
    _wait_for_starts(model_log, 2, worker.proc)
    stopped = time.monotonic()
    worker.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert worker.stop(signal.SIGTERM) == 0, worker.text()
    assert time.monotonic() - stopped < 5
    assert [(r.status, r.error) for r in list_runs(db)] == [("PENDING", None)] * 2


def test_dur_svc_020_the_service_stops_gracefully_on_sigterm(tmp_path, files, monkeypatch):
    """DUR-SVC-020: the example service in durable mode (uvicorn, two runs at once) gets SIGTERM with two model
    calls in flight: its lifespan ends once they are recorded, its runs PENDING or still queued, none failed; the same
    executor id started again finishes them, each side effect and model call once."""
    import httpx

    effects, model_log = files
    monkeypatch.setenv("DURABLE_CALLS", "2")  # the bot of the process that finishes the runs, as the service's
    db, port = f"sqlite:///{tmp_path / 's.sqlite'}", free_port()
    env = subprocess_env(DURABLE_DB=db, DURABLE_CALLS="2", DURABLE_LATENCY_S="1", **LIVENESS)
    with (tmp_path / "service.log").open("w") as log:
        proc = subprocess.Popen([PYTHON, "-m", "uvicorn", "tests.durable.service_app:app", "--host", "127.0.0.1",
                                 "--port", str(port)], env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "service.log").read_text()
        try:
            if httpx.get(f"{base}/health").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    ids = [httpx.post(f"{base}/runs", json={"question": f"svc{i}"}).json()["run_id"] for i in range(3)]
    _wait_for_starts(model_log, 2, proc)
    stopped = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    # uvicorn answers SIGTERM by shutting down (the lifespan included) and raising the signal again afterwards
    assert proc.wait(timeout=60) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in (tmp_path / "service.log").read_text()
    assert time.monotonic() - stopped < 8
    log = Counter(model_log.read_text().splitlines())
    assert all(log[line.replace("|start ", "|end ")] == 1 for line in log if "|start " in line), log
    runs = list_runs(db)
    assert {r.status for r in runs} <= {"PENDING", "ENQUEUED", "SUCCESS"} and not [r for r in runs if r.error]

    again = Durable("tests.durable.agents:make_agent", db=db, executor_id="service")
    answers = {run_id: again.result(run_id) for run_id in ids}
    queries = {run_id: show.query for run_id, show in ((i, again.show(i)) for i in ids)}
    assert answers == {i: f"{queries[i]} -> recorded 1; recorded 2" for i in ids}
    assert Counter(effects.read_text().splitlines()) == Counter({f"{queries[i]}|{s}": 1 for i in ids for s in (1, 2)})

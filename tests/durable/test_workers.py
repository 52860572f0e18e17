"""Many workers on one PostgreSQL: queued runs spread over worker processes; a worker killed mid-way is
restarted with its name and recovers its runs; every run completes once.

The suite enqueues 40 runs (2 cores shared with the rest of the suite); ``benchmarks/durable_overhead.py``
runs the 200-run version and reports ``workers_ratio``.
"""

from __future__ import annotations

import signal
import time
from collections import Counter

from llamabot.durable import list_runs, wait_result
from llamabot.durable.runs import client
from tests.durable.workers import Worker, enqueue_runs


def test_dur_wrk_010_two_workers_one_killed_every_run_completes_once(postgres_url, files, tmp_path):
    """DUR-WRK-010/020/030"""
    effects, _ = files
    db = postgres_url.rsplit("/", 1)[0] + "/workers"
    env = {"DURABLE_CALLS": "2", "DURABLE_LATENCY_S": "0.1"}
    w1, w2 = Worker(db, "w1", tmp_path / "w1.log", **env), Worker(db, "w2", tmp_path / "w2.log", **env)
    try:
        ids = enqueue_runs(db, 40, "job")
        deadline = time.monotonic() + 60
        while sum(r.status == "SUCCESS" for r in list_runs(db, limit=100)) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        w1.stop(signal.SIGKILL)  # mid-way: some runs done, some in flight on w1, some still queued
        w1 = Worker(db, "w1", tmp_path / "w1-again.log", **env)  # the same name: it recovers its runs
        with client(db) as via:
            results = {run_id: wait_result(run_id, via=via) for run_id in ids}
    finally:
        for worker in (w1, w2):
            worker.stop(signal.SIGTERM, timeout=30)
    assert results == {i: f"{i} -> recorded 1; recorded 2" for i in ids}
    assert Counter(r.status for r in list_runs(db, limit=100)) == Counter({"SUCCESS": 40})
    done = Counter(effects.read_text().splitlines())
    assert set(done) == {f"{i}|{step}" for i in ids for step in (1, 2)}
    # A tool attempt cut off by the kill between its side effect and its checkpoint runs again (DBOS steps are
    # at least once for the step in flight); at most one per run that was in flight on w1 (concurrency 10).
    assert sum(n - 1 for n in done.values()) <= 10, done

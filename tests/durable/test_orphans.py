"""No run left behind: workers SIGKILLed at random moments never come back (new executor ids start instead, as in a
deployment); the live workers notice the dead executors' silence and recover their runs, exactly once even while
three of them race to. Real PostgreSQL, real worker processes.

Sized for 2 shared cores: 200 runs of two tool calls, three workers, three kills (about 30-60 s). The seed of the
kill schedule is printed; ``DURABLE_CHAOS_SEED=N`` replays one.
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
from collections import Counter, defaultdict

from llamabot.durable import list_runs, wait_result
from llamabot.durable.runs import client
from tests.durable.workers import Worker, enqueue_runs

RUNS, KILLS, CONCURRENCY = 200, 3, 10
RECOVERED = re.compile(r"^recovered run (\S+) of dead executor (\S+)$", re.MULTILINE)


def _finished(model_log) -> int:
    """Runs that made their last model call (the answer)."""
    text = model_log.read_text() if model_log.exists() else ""
    return text.count("|end 2\n")


def test_dur_orph_010_killed_workers_never_come_back_and_every_run_finishes_once(postgres_url, files, tmp_path,
                                                                                 monkeypatch):
    """DUR-ORPH-010/030/040, DUR-WRK-030"""
    effects, model_log = files
    keys = tmp_path / "keys.txt"
    monkeypatch.setenv("DURABLE_KEYS", str(keys))
    seed = int(os.environ.get("DURABLE_CHAOS_SEED") or time.time_ns() % 10**6)
    print(f"DURABLE_CHAOS_SEED={seed}")
    rng = random.Random(seed)
    db = postgres_url.rsplit("/", 1)[0] + f"/orphans{seed}"
    env = {"DURABLE_CALLS": "2", "DURABLE_LATENCY_S": "0.05", "LLAMABOT_DURABLE_HEARTBEAT_S": "1",
           "LLAMABOT_DURABLE_ORPHAN_S": "3"}
    names = iter(f"w{i}" for i in range(100))
    live = [Worker(db, (n := next(names)), tmp_path / f"{n}.log", CONCURRENCY, **env) for _ in range(3)]
    everyone, killed = list(live), []
    started = time.monotonic()
    try:
        ids = enqueue_runs(db, RUNS, "o")
        for kill in range(KILLS):  # at random moments between 10% and 75% of the runs done
            target = int(RUNS * rng.uniform(0.1 + 0.2 * kill, 0.25 + 0.2 * kill))
            deadline = time.monotonic() + 90
            while _finished(model_log) < target and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(rng.uniform(0, 0.3))
            victim = live.pop(rng.randrange(len(live)))
            victim.stop(signal.SIGKILL)
            killed.append(victim.name)
            live.append(Worker(db, (n := next(names)), tmp_path / f"{n}.log", CONCURRENCY, **env))  # a new id
            everyone.append(live[-1])
        with client(db) as via:
            results = {run_id: wait_result(run_id, via=via) for run_id in ids}
    finally:
        for worker in live:
            worker.stop(signal.SIGTERM)
    done = Counter(effects.read_text().splitlines())
    recoveries = Counter(m for w in everyone for m in RECOVERED.findall(w.text()))
    print(f"{RUNS} runs, kills {killed}: {time.monotonic() - started:.1f} s, {len(recoveries)} recoveries, "
          f"{sum(n - 1 for n in done.values())} effects repeated")

    assert results == {i: f"{i} -> recorded 1; recorded 2" for i in ids}
    assert Counter(r.status for r in list_runs(db, limit=2 * RUNS)) == Counter({"SUCCESS": RUNS})
    # Recovery, exactly once: each run of a dead executor was resumed by one live worker, never by two.
    assert recoveries and set(recoveries.values()) == {1}, recoveries
    assert {executor for _, executor in recoveries} <= set(killed)
    # Every tool call's effect happened; an attempt cut by a kill between its effect and its checkpoint ran again
    # (at least once for the step in flight), at most once per run in flight on a killed worker...
    assert set(done) == {f"{i}|{step}" for i in ids for step in (1, 2)}
    assert sum(n - 1 for n in done.values()) <= KILLS * CONCURRENCY, done
    # ...and both executions of such an attempt carried the same (run id, step number): a tool keyed by it
    # (current_step) makes each effect exactly once.
    keyed: dict[str, set[str]] = defaultdict(set)
    for line in keys.read_text().splitlines():
        run, step, key = line.split("|")
        keyed[f"{run}|{step}"].add(key)
    assert keyed.keys() == done.keys() and all(len(k) == 1 for k in keyed.values())
    assert all(key.startswith(run.split("|")[0] + ":") for run, (key,) in keyed.items())
    # Every completed model call was sent once; only a call cut by a kill was sent again.
    ends = Counter(line for line in model_log.read_text().splitlines() if "|end " in line)
    assert len(ends) == 3 * RUNS and sum(n - 1 for n in ends.values()) <= KILLS * CONCURRENCY


def test_dur_orph_030_of_racing_claims_on_one_dead_executor_exactly_one_wins(db_url):
    """DUR-ORPH-030 on SQLite and PostgreSQL: eight threads claim the recovery of one executor at the same
    instant; one wins, the claim then holds for the timeout, and expires after it."""
    import threading

    from llamabot.durable.executors import claim, claim_holder, executors_engine
    from llamabot.durable.runs import client

    with client(db_url):  # creates the database
        pass
    with executors_engine(db_url) as engine:
        barrier, won = threading.Barrier(8), []

        def race(i: int) -> None:
            barrier.wait()
            if claim(engine, "dead-1", f"worker-{i}", 60):
                won.append(f"worker-{i}")

        threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1 and claim_holder(engine, "dead-1")[0] == won[0]
        assert not claim(engine, "dead-1", "late", 60)  # held for the timeout
        time.sleep(1.1)
        assert claim(engine, "dead-1", "after", 1)  # then another worker may take it

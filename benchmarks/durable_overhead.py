"""Durable runs: what checkpointing every step costs, what a second worker buys, how fast a crash recovers.

    python benchmarks/durable_overhead.py [--quick]

- ``durable_step_ratio_sqlite`` / ``_postgres``: per-step wall time of a durable AgentBot run (every model call
  and tool call a DBOS step) over the same run in memory; scripted model with 50 ms latency, 4 decisions per run,
  runs one after another. Target <= 1.2.
- ``workers_ratio``: wall time of N enqueued runs (200; quick: 40) with two worker processes over one, on one
  PostgreSQL (scripted model, 200 ms latency, 3 decisions each; each worker executes up to 25 runs at once).
  Ideal 0.5.
- ``dbos_noop_step_ms_sqlite`` / ``_postgres``: DBOS's own floor, the median wall time of a step that does
  nothing (checked and recorded like a model or tool call; an agent decision is two such steps), back to back;
  ``dbos_idle_step_ms_*``: the same step after 50 ms idle, as the model call's checkpoint follows the model's wait
  (this machine runs slower for a while after idling: a loopback PostgreSQL round trip takes several times longer
  and a Python loop about 1.7x). ``floor_ratio_*``: an in-memory step plus one of each over the in-memory step,
  the best ``durable_step_ratio`` DBOS allows here.
- ``recovery_s``: from SIGKILL of a process in the middle of a run to the next step of the same run in a newly
  started process (a new Python process: imports, DBOS launch, recovery, replay of the recorded steps).

PostgreSQL is a real server started for the benchmark (``tests/durable/postgres.py``); the bots are the test bots
of ``tests/durable/agents.py`` (a deterministic model, tools that append to a file). ``--quick``: fewer runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dbos import DBOS  # noqa: E402

from llamabot.durable import Durable, shutdown, wait_result  # noqa: E402
from llamabot.durable.runs import client, enqueue  # noqa: E402
from tests.durable.agents import make_agent  # noqa: E402
from tests.durable.postgres import postgres_server  # noqa: E402

DECISIONS = 4  # make_agent with DURABLE_CALLS=3: three tool calls, then respond_to_user
LATENCY_S = 0.05  # the scripted model's latency in the per-step runs
WORKER = "from llamabot.cli import main; main()"


def env(**extra: str) -> dict[str, str]:
    e = {**os.environ, **extra}
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return e


async def _noop(i: int) -> int:
    return i


@DBOS.workflow(name="llamabot-bench-noop-steps")
async def noop_steps(n: int, idle_s: float = 0.0) -> list[float]:
    """DBOS's own floor: ``n`` steps that do nothing, each checked and recorded like a model or tool call; with
    ``idle_s``, each after that long idle (as a step that follows a model's wait)."""
    times = []
    for i in range(n):
        if idle_s:
            await asyncio.sleep(idle_s)
        started = time.perf_counter()
        await DBOS.run_step_async({"name": "noop"}, _noop, i)
        times.append(time.perf_counter() - started)
    return times


async def per_step_ratio(db: str, runs: int) -> tuple[float, float, float, float, float]:
    """(durable ms per step, in-memory ms per step, ratio, DBOS's no-op step in ms, the same after 50 ms idle),
    medians over ``runs`` sequential runs each (the no-op steps: over 20 per run)."""
    bot = make_agent()
    agent = Durable(make_agent, db=db)
    await agent.arun("warm-up")
    memory, durable = [], []
    for i in range(runs):
        started = time.perf_counter()
        await bot.arun(f"m{i}")
        memory.append((time.perf_counter() - started) / DECISIONS)
        started = time.perf_counter()
        await agent.arun(f"d{i}")
        durable.append((time.perf_counter() - started) / DECISIONS)
    handle = await DBOS.start_workflow_async(noop_steps, 20 * runs)
    floor = statistics.median(await handle.get_result())
    handle = await DBOS.start_workflow_async(noop_steps, 20 * runs, LATENCY_S)
    idle_floor = statistics.median(await handle.get_result())
    shutdown()
    d, m = statistics.median(durable), statistics.median(memory)
    return d * 1000, m * 1000, d / m, floor * 1000, idle_floor * 1000


def workers_wall(db: str, workers: int, runs: int, tag: str) -> float:
    """Seconds from enqueueing ``runs`` runs until all are done, with ``workers`` worker processes."""
    e = env(DURABLE_CALLS="2", DURABLE_LATENCY_S="0.2", DURABLE_EFFECTS="", DURABLE_MODEL_LOG="")
    procs = []
    for w in range(workers):
        proc = subprocess.Popen([sys.executable, "-c", WORKER, "worker", "--db", db, "--executor-id", f"{tag}{w}",
                                 "--concurrency", "25"], env=e, stderr=subprocess.PIPE, text=True)
        line = proc.stderr.readline()
        if not line.startswith("worker ready"):
            raise RuntimeError(line + proc.stderr.read())
        procs.append(proc)
    try:
        with client(db) as via:
            started = time.perf_counter()
            ids = [enqueue("tests.durable.agents:make_agent", f"{tag}-{i}", {}, f"{tag}-{i}", via=via)
                   for i in range(runs)]
            for run_id in ids:
                wait_result(run_id, via=via)
            return time.perf_counter() - started
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def recovery_seconds(db: str, folder: Path) -> float:
    """SIGKILL in the middle of a run -> the next step of that run in a new process."""
    log = folder / "recovery-model.txt"
    e = env(DURABLE_CALLS="3", DURABLE_LATENCY_S="0.5", DURABLE_MODEL_LOG=str(log), DURABLE_EFFECTS="")
    cmd = [sys.executable, "-m", "tests.durable.run_agent", db, "recover-me", "recover"]
    first = subprocess.Popen(cmd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    while not (log.exists() and "recover|start 2" in log.read_text()):
        time.sleep(0.01)
    first.send_signal(signal.SIGKILL)
    killed = time.perf_counter()
    first.wait()
    before = len(log.read_text().splitlines())
    second = subprocess.Popen(cmd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    while len(log.read_text().splitlines()) == before:  # the first new line: the re-sent model call starts
        time.sleep(0.005)
    resumed = time.perf_counter() - killed
    second.wait(timeout=60)
    return resumed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs (smoke checks); also LLAMABOT_BENCH_QUICK=1")
    quick = parser.parse_args().quick or os.environ.get("LLAMABOT_BENCH_QUICK", "").lower() in ("1", "true", "yes", "on")
    runs, queued = (3, 40) if quick else (10, 200)
    os.environ.update(DURABLE_CALLS="3", DURABLE_LATENCY_S=str(LATENCY_S), DURABLE_EFFECTS="", DURABLE_MODEL_LOG="")
    with tempfile.TemporaryDirectory() as tmp, postgres_server() as pg:
        folder = Path(tmp)
        base = pg.rsplit("/", 1)[0]
        floors = {}
        for label, key, db in (("SQLite:    ", "sqlite", f"sqlite:///{folder / 'bench.sqlite'}"),
                               ("PostgreSQL:", "postgres", f"{base}/steps")):
            d, m, ratio, floor, idle = asyncio.run(per_step_ratio(db, runs))
            # a decision is two steps: the model call's (recorded after the model's wait) and the tool call's
            floors[key] = (ratio, floor, idle, (m + floor + idle) / m)
            print(f"{label} durable {d:6.1f} ms/step, in memory {m:6.1f} ms/step -> ratio {ratio:.3f}; a DBOS step "
                  f"that does nothing: {floor:.2f} ms, {idle:.2f} ms after {LATENCY_S * 1000:.0f} ms idle -> DBOS's "
                  f"floor for a decision (one of each): ratio {floors[key][3]:.3f}")
        (sqlite_ratio, sqlite_floor, sqlite_idle, sqlite_floor_ratio) = floors["sqlite"]
        (pg_ratio, pg_floor, pg_idle, pg_floor_ratio) = floors["postgres"]
        one = workers_wall(f"{base}/one", 1, queued, "one")
        two = workers_wall(f"{base}/two", 2, queued, "two")
        print(f"{queued} queued runs x 3 decisions @ 200 ms: one worker {one:.2f} s, two workers {two:.2f} s "
              f"(ideal one worker {queued * 0.6 / 25:.2f} s) -> ratio {two / one:.2f}")
        recovery = recovery_seconds(f"{base}/recovery", folder)
        print(f"recovery: SIGKILL -> next step of the run in a new process: {recovery:.2f} s")
    print(f"RESULT durable_step_ratio_sqlite={sqlite_ratio:.3f} durable_step_ratio_postgres={pg_ratio:.3f} "
          f"workers_ratio={two / one:.3f} recovery_s={recovery:.3f} dbos_noop_step_ms_sqlite={sqlite_floor:.2f} "
          f"dbos_noop_step_ms_postgres={pg_floor:.2f} dbos_idle_step_ms_sqlite={sqlite_idle:.2f} "
          f"dbos_idle_step_ms_postgres={pg_idle:.2f} floor_ratio_sqlite={sqlite_floor_ratio:.3f} "
          f"floor_ratio_postgres={pg_floor_ratio:.3f} runs={queued} quick={int(quick)}")


if __name__ == "__main__":
    main()

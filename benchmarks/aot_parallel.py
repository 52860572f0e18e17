"""AoT parallel execution: a plan 8 atoms wide and 3 layers deep whose tools each take 50 ms.

Ideal: 3 layers x 50 ms = 150 ms (one atom at a time: 24 x 50 ms = 1.2 s). Measured side by side in one run, the
median of 5 runs each: the async executor (``aexecute_plan``) with async tools (``asyncio.sleep``) and with
blocking tools in worker threads (``time.sleep``), and the sync executor (``execute_plan``), which runs each
layer's blocking tools on threads too. Ends with ``RESULT parallel_ratio=... parallel_ratio_threads=... sync_s=...
quick=0`` (the ratios: wall time over the ideal; ``sync_s``: the sync executor's wall time in seconds).

    python benchmarks/aot_parallel.py [--runs 5] [--quick]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): one run of each executor instead of the median of 5, for smoke checks
(``quick=1`` in the ``RESULT`` line).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from llamabot import tool
from llamabot.reasoning.aot import Plan, aexecute_plan, execute_plan, validate_plan

WIDTH, DEPTH, LATENCY = 8, 3, 0.05


@tool
async def slow_step(x: float) -> float:
    """Takes 50 ms (async)."""
    await asyncio.sleep(LATENCY)
    return x + 1


@tool
def blocking_step(x: float) -> float:
    """Takes 50 ms (blocking)."""
    time.sleep(LATENCY)
    return x + 1


def wide_plan(tool_name: str) -> Plan:
    atoms = []
    for layer in range(DEPTH):
        for lane in range(WIDTH):
            atom_id = layer * WIDTH + lane + 1
            x = lane if layer == 0 else f"<result_of_{atom_id - WIDTH}>"
            atoms.append({"id": atom_id, "kind": "tool", "name": tool_name, "input": {"x": x}})
    last = list(range((DEPTH - 1) * WIDTH + 1, DEPTH * WIDTH + 1))
    atoms.append({"id": DEPTH * WIDTH + 1, "kind": "final", "name": "report", "dependsOn": last})
    return Plan.model_validate({"atoms": atoms})


def measure(tool_obj, runs: int = 5, sync: bool = False) -> float:
    """The median wall time of ``runs`` executions of the wide plan of ``tool_obj``: ``execute_plan`` when
    ``sync``, else ``aexecute_plan``."""
    tools = {tool_obj.tool.name: tool_obj.tool}
    plan, _ = validate_plan(wide_plan(tool_obj.tool.name), tools)
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        record = execute_plan(plan, tools) if sync else asyncio.run(aexecute_plan(plan, tools))
        walls.append(time.perf_counter() - started)
        assert record.answer == {i + (DEPTH - 1) * WIDTH + 1: i + DEPTH for i in range(WIDTH)}
    return statistics.median(walls)


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=None, help="runs per executor (default 5; 1 in quick mode)")
    parser.add_argument("--quick", action="store_true", help="far fewer repetitions (smoke checks); also LLAMABOT_BENCH_QUICK=1")
    args = parser.parse_args()
    quick = quick_mode(args.quick)
    runs = args.runs if args.runs is not None else (1 if quick else 5)
    if quick:
        print(f"quick mode: {runs} run(s) per executor")
    ideal = DEPTH * LATENCY
    async_wall = measure(slow_step, runs)
    thread_wall = measure(blocking_step, runs)
    sync_wall = measure(blocking_step, runs, sync=True)
    print(f"plan {WIDTH} wide x {DEPTH} deep, {LATENCY * 1000:.0f} ms per tool; ideal {ideal * 1000:.0f} ms")
    print(f"async executor, async tools:        {async_wall * 1000:7.1f} ms  ratio {async_wall / ideal:.3f}")
    print(f"async executor, tools in threads:   {thread_wall * 1000:7.1f} ms  ratio {thread_wall / ideal:.3f}")
    print(f"sync executor, tools in threads:    {sync_wall * 1000:7.1f} ms  ratio {sync_wall / ideal:.3f}")
    print(f"RESULT parallel_ratio={async_wall / ideal:.3f} parallel_ratio_threads={thread_wall / ideal:.3f} "
          f"sync_s={sync_wall:.3f} quick={int(quick)}")


if __name__ == "__main__":
    main()

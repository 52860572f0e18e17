"""AoT parallel execution: a plan 8 atoms wide and 3 layers deep whose tools each take 50 ms.

Ideal: 3 layers x 50 ms = 150 ms (sequential: 24 x 50 ms = 1.2 s). Measured side by side in one run: async
tools (``asyncio.sleep``), blocking tools run in worker threads (``time.sleep``), and the sequential sync
executor. Ends with ``RESULT parallel_ratio=... parallel_ratio_threads=... sequential_s=... quick=0``.

    python benchmarks/aot_parallel.py [--runs 5] [--quick]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): one run of each parallel executor instead of the median of 5, for
smoke checks (``quick=1`` in the ``RESULT`` line).
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


def measure(tool_obj, runs: int = 5) -> float:
    tools = {tool_obj.tool.name: tool_obj.tool}
    plan, _ = validate_plan(wide_plan(tool_obj.tool.name), tools)
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        record = asyncio.run(aexecute_plan(plan, tools))
        walls.append(time.perf_counter() - started)
        assert record.answer == {i + (DEPTH - 1) * WIDTH + 1: i + DEPTH for i in range(WIDTH)}
    return statistics.median(walls)


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=None, help="runs per parallel executor (default 5; 1 in quick mode)")
    parser.add_argument("--quick", action="store_true", help="far fewer repetitions (smoke checks); also LLAMABOT_BENCH_QUICK=1")
    args = parser.parse_args()
    quick = quick_mode(args.quick)
    runs = args.runs if args.runs is not None else (1 if quick else 5)
    if quick:
        print(f"quick mode: {runs} run(s) per parallel executor")
    ideal = DEPTH * LATENCY
    async_wall = measure(slow_step, runs)
    thread_wall = measure(blocking_step, runs)
    tools = {blocking_step.tool.name: blocking_step.tool}
    plan, _ = validate_plan(wide_plan(blocking_step.tool.name), tools)
    started = time.perf_counter()
    record = execute_plan(plan, tools)
    sequential = time.perf_counter() - started
    assert record.answer == {i + (DEPTH - 1) * WIDTH + 1: i + DEPTH for i in range(WIDTH)}
    print(f"plan {WIDTH} wide x {DEPTH} deep, {LATENCY * 1000:.0f} ms per tool; ideal {ideal * 1000:.0f} ms")
    print(f"async tools:                {async_wall * 1000:7.1f} ms  ratio {async_wall / ideal:.3f}")
    print(f"blocking tools in threads:  {thread_wall * 1000:7.1f} ms  ratio {thread_wall / ideal:.3f}")
    print(f"sequential (sync executor): {sequential * 1000:7.1f} ms")
    print(f"RESULT parallel_ratio={async_wall / ideal:.3f} parallel_ratio_threads={thread_wall / ideal:.3f} "
          f"sequential_s={sequential:.3f} quick={int(quick)}")


if __name__ == "__main__":
    main()

"""Parallel tool calls in async agent runs, measured side by side in one run.

One reply asks for ``CALLS`` independent calls of a tool that waits ``WAIT_S`` (an I/O-bound tool: a blocking
sync function, run in worker threads, and a coroutine), then the run answers. The same ``AsyncAgentBot`` graph
runs with ``max_parallel_tools=1`` (one call at a time, as before) and with the default bound (8):

- ``sync_tool_ratio`` / ``async_tool_ratio``: wall time with parallel calls over one at a time (ideal:
  1 / CALLS);
- ``overhead_ms``: what the parallel run took beyond one tool wait (scripted model, zero latency).

    python benchmarks/parallel_calls.py [--quick]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): fewer repetitions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from llamabot import AsyncAgentBot, ScriptedModel, tool
from llamabot.models.scripted import tool_call, tool_calls

CALLS = 4
WAIT_S = 0.05


@tool
def fetch_blocking(key: str) -> str:
    """Fetch a value (blocking I/O).

    Args:
        key: Which value.
    """
    time.sleep(WAIT_S)
    return key


@tool
async def fetch_async(key: str) -> str:
    """Fetch a value (async I/O).

    Args:
        key: Which value.
    """
    await asyncio.sleep(WAIT_S)
    return key


def script(name: str) -> list:
    return [tool_calls(*((name, {"key": f"k{i}"}) for i in range(CALLS))), tool_call("respond_to_user", response="ok")]


async def wall(tool_fn, limit: int) -> float:
    bot = AsyncAgentBot(tools=[tool_fn], model=ScriptedModel(script(tool_fn.tool.name)), max_parallel_tools=limit)
    started = time.perf_counter()
    assert await bot.arun("q") == "ok"
    return time.perf_counter() - started


async def main(repeats: int) -> None:
    results = {}
    for label, tool_fn in (("sync_tool", fetch_blocking), ("async_tool", fetch_async)):
        pairs = []
        for _ in range(repeats):  # alternate, so drift on a shared machine hits both sides alike
            sequential = await wall(tool_fn, 1)
            parallel = await wall(tool_fn, 8)
            pairs.append((parallel, sequential))
        parallel_s = statistics.median(p for p, _ in pairs)
        sequential_s = statistics.median(s for _, s in pairs)
        results[label] = (parallel_s, sequential_s)
        print(f"{label}: {CALLS} calls of {WAIT_S * 1000:.0f} ms: one at a time {sequential_s * 1000:.1f} ms, "
              f"parallel {parallel_s * 1000:.1f} ms -> ratio {parallel_s / sequential_s:.3f} (ideal {1 / CALLS:.3f})")
    overhead_ms = (results["async_tool"][0] - WAIT_S) * 1000
    print(
        f"RESULT sync_tool_ratio={results['sync_tool'][0] / results['sync_tool'][1]:.3f} "
        f"async_tool_ratio={results['async_tool'][0] / results['async_tool'][1]:.3f} "
        f"overhead_ms={overhead_ms:.2f} calls={CALLS} quick={int(repeats < 9)}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    quick = args.quick or os.environ.get("LLAMABOT_BENCH_QUICK") == "1"
    asyncio.run(main(3 if quick else 15))

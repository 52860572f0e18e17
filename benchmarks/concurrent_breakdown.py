"""Where ``agent_overhead.py``'s ``concurrent_ratio`` comes from: the same burst at several latencies, asyncio's own
floor, and the garbage collector's share, measured side by side in one process.

``concurrent_ratio`` is the wall time of 1,000 concurrent ``arun`` (3 decisions each, scripted model with 50 ms
latency) over the ideal 150 ms. Runs wake in the order they went to sleep and each phase of the burst runs them
one after another, so the wall time is about ``3 x latency`` plus one phase of all the runs' CPU: the excess does
not shrink with a longer wait, and the ratio does.

- ``asyncio_floor_ratio``: 1,000 chains of three bare ``asyncio.sleep(0.05)`` (nothing of llamabot) over the ideal:
  what asyncio alone costs in this pattern.
- ``ratio_<L>ms`` / ``excess_<L>ms``: the agent burst at latency L (30, 50, 100, 200 ms): wall time over
  ``3 x L``, and wall time minus ``3 x L`` in ms (medians; the latencies alternate within each round).
- ``gc_cpu_ms`` / ``gc_ratio_delta``: the burst at 50 ms with the collector on minus the same burst with it
  disabled (paired medians, alternating): the collector's CPU per burst and its share of the ratio.

    python benchmarks/concurrent_breakdown.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time

from agent_overhead import STEPS_PER_RUN, bench_concurrent, quick_mode

LATENCIES = (0.03, 0.05, 0.1, 0.2)


async def bare_chains(n: int, latency: float) -> float:
    """Wall time of ``n`` concurrent chains of ``STEPS_PER_RUN`` bare sleeps."""

    async def chain() -> None:
        for _ in range(STEPS_PER_RUN):
            await asyncio.sleep(latency)

    t0 = time.perf_counter()
    await asyncio.gather(*(chain() for _ in range(n)))
    return time.perf_counter() - t0


def burst(n: int, latency: float, collector: bool = True) -> tuple[float, float]:
    """(wall s, CPU ms) of one agent burst; ``collector=False``: with the garbage collector disabled."""
    gc.collect()
    if not collector:
        gc.disable()
    try:
        c0 = time.process_time()
        wall = asyncio.run(bench_concurrent(n, latency))
        return wall, (time.process_time() - c0) * 1000
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs and rounds (smoke checks)")
    quick = quick_mode(parser.parse_args().quick)
    n, rounds = (100, 1) if quick else (1000, 5)
    asyncio.run(bench_concurrent(min(n, 100), 0.0))  # warm-up

    floor = statistics.median(asyncio.run(bare_chains(n, 0.05)) for _ in range(rounds)) / (STEPS_PER_RUN * 0.05)
    print(f"asyncio alone, {n} chains of {STEPS_PER_RUN} sleeps @ 50 ms: ratio {floor:.3f}")

    walls: dict[float, list[float]] = {latency: [] for latency in LATENCIES}
    for index in range(rounds):
        for latency in LATENCIES if index % 2 == 0 else LATENCIES[::-1]:
            walls[latency].append(burst(n, latency)[0])
    fields = [f"asyncio_floor_ratio={floor:.3f}"]
    for latency in LATENCIES:
        wall = statistics.median(walls[latency])
        ideal = STEPS_PER_RUN * latency
        ms = round(latency * 1000)
        print(f"{n} concurrent arun @ {ms:3d} ms: {wall * 1000:6.0f} ms (ideal {ideal * 1000:.0f}) -> ratio "
              f"{wall / ideal:.3f}, excess {(wall - ideal) * 1000:.0f} ms")
        fields += [f"ratio_{ms}ms={wall / ideal:.3f}", f"excess_{ms}ms={(wall - ideal) * 1000:.1f}"]

    on: list[tuple[float, float]] = []
    off: list[tuple[float, float]] = []
    for index in range(2 * rounds):
        for collector in (True, False) if index % 2 == 0 else (False, True):
            (on if collector else off).append(burst(n, 0.05, collector))
    ideal = STEPS_PER_RUN * 0.05
    gc_cpu = statistics.median(a[1] - b[1] for a, b in zip(on, off, strict=True))
    gc_ratio = statistics.median((a[0] - b[0]) / ideal for a, b in zip(on, off, strict=True))
    print(f"the garbage collector in the 50 ms burst: {gc_cpu:.1f} ms of CPU, {gc_ratio:+.3f} of the ratio "
          f"(paired medians of {len(on)}; CPU per burst {statistics.median(a[1] for a in on):.0f} ms with it)")
    fields += [f"gc_cpu_ms={gc_cpu:.1f}", f"gc_ratio_delta={gc_ratio:.3f}"]
    print("RESULT " + " ".join(fields) + f" n={n} quick={int(quick)}")


if __name__ == "__main__":
    main()

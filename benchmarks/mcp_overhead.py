"""Per-call overhead of an MCP tool over the same function as a local ``@tool``, measured side by side in one run.

The server is a one-tool MCP server (``add``) built with the ``mcp`` package, written to a temporary directory
and started over stdio; the local tool is the same function decorated with ``@tool``. Every figure is the median
of 5 samples of sequential calls (gc off), each call through the one tool-call logic (argument validation
included: the JSON schema as given for the MCP tool, pydantic for the local one).

- ``local_call_us``: ``invoke_tool(add, args)`` on the local ``@tool``.
- ``mcp_call_us``: the same through ``mcp_tools`` (sync caller: the call is submitted to the session's loop
  thread and waited for); ``ratio`` = ``mcp_call_us / local_call_us``.
- ``mcp_async_call_us``: ``await ainvoke_tool(...)`` from an event loop (the tool's ``afunc``).
- ``mcp_concurrent_call_us``: wall time per call of 32 concurrent ``ainvoke_tool`` calls, repeated.
- ``sdk_call_us``: the ``mcp`` package's own ``Client.call_tool`` on a second process of the same server, timed
  inside its own loop: the floor that the transport and the server set. Its samples alternate with the MCP
  tool's (a shared machine's busy moments hit both alike). ``over_sdk_us`` = ``mcp_call_us - sdk_call_us``: what llamabot adds
  (the thread hop, validation, the result conversion, the tool-call logic). ``thread_hop_us``: a no-op
  coroutine's round trip from this thread to a loop thread and back, alternated with the others: the part of
  ``over_sdk_us`` that is the operating system's scheduling, large on a busy machine.
- ``mcp_cpu_us``, ``sdk_cpu_us``, ``over_sdk_cpu_us``: the same per call in CPU time of this process (all its
  threads; not the server's): llamabot's own work per call, which a busy machine disturbs far less than wall time.
- ``startup_ms``: ``mcp_tools(command)`` until the tools are listed (process start, handshake, listing).

    python benchmarks/mcp_overhead.py [--quick]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): fewer calls (seconds), noisier figures; the RESULT line says which.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path

from llamabot import tool
from llamabot.tools.call import ainvoke_tool, invoke_tool
from llamabot.tools.mcp import mcp_tools

SERVER = textwrap.dedent('''
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")


    @server.tool()
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b


    server.run()
''')

ARGUMENTS = {"a": 2.5, "b": 4.0}
SAMPLES = 5
CONCURRENCY = 32


@tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


Sampler = Callable[[], tuple[float, float]]


def timed(run: Callable[[], object], calls: int) -> tuple[float, float]:
    """``run()`` (which makes ``calls`` calls): seconds per call, wall and CPU. CPU is this process's (every
    thread: the sessions' loop threads included; the server processes excluded), which a busy machine disturbs far
    less than wall time."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


def alternated_us(*samplers: Sampler) -> list[tuple[float, float]]:
    """Each sampler run :data:`SAMPLES` times, taking turns (so that a busy moment of a shared machine hits them
    alike), gc off; per sampler the median wall and CPU time per call, in microseconds."""
    gc.collect()
    gc.disable()
    try:
        taken: list[list[tuple[float, float]]] = [[] for _ in samplers]
        for _ in range(SAMPLES):
            for sample, into in zip(samplers, taken, strict=True):
                into.append(sample())
        return [
            (statistics.median(w for w, _ in t) * 1e6, statistics.median(c for _, c in t) * 1e6)
            for t in taken
        ]
    finally:
        gc.enable()


def per_call(call: Callable[[], object], n: int) -> Sampler:
    def run() -> None:
        for _ in range(n):
            call()

    return lambda: timed(run, n)


def async_per_call(make: Callable[[], object], n: int, concurrent: int = 1) -> Sampler:
    rounds = n // concurrent

    async def batch() -> None:
        for _ in range(rounds):
            await asyncio.gather(*(make() for _ in range(concurrent)))

    return lambda: timed(lambda: asyncio.run(batch()), rounds * concurrent)


async def nothing() -> None:
    """A coroutine that does nothing: its round trip to a loop thread is the cost of one thread hand-off."""


class SdkSession:
    """The ``mcp`` client alone on another server process of the same script, in a loop thread of its own: each
    sample is ``n`` sequential ``Client.call_tool`` made inside that loop (one hand-off per sample, not per call)."""

    def __init__(self, command: list[str]):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.ready: futures.Future[asyncio.Queue] = futures.Future()
        self.served = asyncio.run_coroutine_threadsafe(self._serve(command), self.loop)
        self.jobs = self.ready.result(timeout=120)

    async def _serve(self, command: list[str]) -> None:
        from mcp import Client, StdioServerParameters

        jobs: asyncio.Queue = asyncio.Queue()
        async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
            await client.list_tools()
            self.ready.set_result(jobs)
            while (job := await jobs.get()) is not None:
                n, done = job
                for _ in range(n):
                    await client.call_tool("add", ARGUMENTS)
                done.set_result(None)

    def per_call(self, n: int) -> Sampler:
        def run() -> None:
            done: futures.Future[None] = futures.Future()
            self.loop.call_soon_threadsafe(self.jobs.put_nowait, (n, done))
            done.result()

        return lambda: timed(run, n)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.jobs.put_nowait, None)
        self.served.result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer calls (seconds), noisier")
    args = parser.parse_args()
    quick = args.quick or os.environ.get("LLAMABOT_BENCH_QUICK") == "1"
    n_local, n_mcp = (2_000, 64) if quick else (50_000, 500)

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "bench_server.py"
        script.write_text(SERVER)
        command = [sys.executable, str(script)]
        started = time.perf_counter()
        with mcp_tools(command) as tools:
            startup_ms = (time.perf_counter() - started) * 1e3
            sdk = SdkSession(command)
            remote = tools[0]
            assert invoke_tool(remote, ARGUMENTS).value == invoke_tool(add, ARGUMENTS).value == 6.5
            for _ in range(20):  # warm both paths
                invoke_tool(remote, ARGUMENTS)
                sdk.per_call(1)()
            ((local_us, local_cpu),) = alternated_us(per_call(lambda: invoke_tool(add, ARGUMENTS), n_local))
            (mcp_us, mcp_cpu), (sdk_us, sdk_cpu), (async_us, async_cpu), (hop_us, hop_cpu) = alternated_us(
                per_call(lambda: invoke_tool(remote, ARGUMENTS), n_mcp),
                sdk.per_call(n_mcp),
                async_per_call(lambda: ainvoke_tool(remote, ARGUMENTS), n_mcp),
                per_call(lambda: asyncio.run_coroutine_threadsafe(nothing(), sdk.loop).result(), n_mcp),
            )
            ((concurrent_us, concurrent_cpu),) = alternated_us(
                async_per_call(lambda: ainvoke_tool(remote, ARGUMENTS), n_mcp * 2, CONCURRENCY)
            )
            sdk.close()

    print(f"{'what':<52} {'wall us/call':>12} {'CPU us/call':>12}")
    rows = [
        ("local @tool, invoke_tool", local_us, local_cpu),
        ("MCP tool, invoke_tool (sync caller)", mcp_us, mcp_cpu),
        ("MCP tool, ainvoke_tool (async caller)", async_us, async_cpu),
        (f"MCP tool, {CONCURRENCY} concurrent ainvoke_tool (per call)", concurrent_us, concurrent_cpu),
        ("mcp package Client.call_tool alone", sdk_us, sdk_cpu),
        ("a no-op coroutine's round trip to a loop thread", hop_us, hop_cpu),
    ]
    for label, wall, cpu in rows:
        print(f"{label:<52} {wall:>12.1f} {cpu:>12.1f}")
    print(f"startup (process, handshake, listing): {startup_ms:.0f} ms")
    print(
        f"RESULT mcp_call_us={mcp_us:.1f} local_call_us={local_us:.2f} ratio={mcp_us / local_us:.1f} "
        f"mcp_async_call_us={async_us:.1f} mcp_concurrent_call_us={concurrent_us:.1f} sdk_call_us={sdk_us:.1f} "
        f"over_sdk_us={mcp_us - sdk_us:.1f} mcp_cpu_us={mcp_cpu:.1f} sdk_cpu_us={sdk_cpu:.1f} "
        f"over_sdk_cpu_us={mcp_cpu - sdk_cpu:.1f} thread_hop_us={hop_us:.1f} startup_ms={startup_ms:.0f} "
        f"quick={int(quick)}"
    )


if __name__ == "__main__":
    main()

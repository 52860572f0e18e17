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
- ``sdk_call_us``: the ``mcp`` package's own ``Client.call_tool`` on the same server, on its own loop: the floor
  that the transport and the server set. ``over_sdk_us`` = ``mcp_call_us - sdk_call_us``: what llamabot adds
  (the thread hop, validation, the result conversion, the tool-call logic).
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
import time
from collections.abc import Callable
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


def median_us(sample: Callable[[], float]) -> float:
    """The median of :data:`SAMPLES` samples (each: seconds per call), in microseconds, gc off."""
    gc.collect()
    gc.disable()
    try:
        return statistics.median(sample() for _ in range(SAMPLES)) * 1e6
    finally:
        gc.enable()


def per_call(call: Callable[[], object], n: int) -> Callable[[], float]:
    def sample() -> float:
        started = time.perf_counter()
        for _ in range(n):
            call()
        return (time.perf_counter() - started) / n

    return sample


def async_per_call(make: Callable[[], object], n: int, concurrent: int = 1) -> Callable[[], float]:
    async def batch() -> float:
        started = time.perf_counter()
        for _ in range(n // concurrent):
            await asyncio.gather(*(make() for _ in range(concurrent)))
        return (time.perf_counter() - started) / (n // concurrent * concurrent)

    return lambda: asyncio.run(batch())


def sdk_call_us(command: list[str], n: int) -> float:
    """The ``mcp`` client's own per-call time on the same server (its own loop, no llamabot)."""
    from mcp import Client, StdioServerParameters

    async def measure() -> list[float]:
        params = StdioServerParameters(command=command[0], args=command[1:])
        async with Client(params) as client:
            await client.list_tools()
            samples = []
            for _ in range(SAMPLES):
                started = time.perf_counter()
                for _ in range(n):
                    await client.call_tool("add", ARGUMENTS)
                samples.append((time.perf_counter() - started) / n)
            return samples

    gc.collect()
    gc.disable()
    try:
        return statistics.median(asyncio.run(measure())) * 1e6
    finally:
        gc.enable()


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
            remote = tools[0]
            assert invoke_tool(remote, ARGUMENTS).value == invoke_tool(add, ARGUMENTS).value == 6.5
            for _ in range(20):  # warm both paths
                invoke_tool(remote, ARGUMENTS)
            local_us = median_us(per_call(lambda: invoke_tool(add, ARGUMENTS), n_local))
            mcp_us = median_us(per_call(lambda: invoke_tool(remote, ARGUMENTS), n_mcp))
            async_us = median_us(async_per_call(lambda: ainvoke_tool(remote, ARGUMENTS), n_mcp))
            concurrent_us = median_us(
                async_per_call(lambda: ainvoke_tool(remote, ARGUMENTS), n_mcp * 2, CONCURRENCY)
            )
        sdk_us = sdk_call_us(command, n_mcp)

    print(f"{'what':<44} {'us/call':>10}")
    rows = [
        ("local @tool, invoke_tool", local_us),
        ("MCP tool, invoke_tool (sync caller)", mcp_us),
        ("MCP tool, ainvoke_tool (async caller)", async_us),
        (f"MCP tool, {CONCURRENCY} concurrent ainvoke_tool (per call)", concurrent_us),
        ("mcp package Client.call_tool alone", sdk_us),
    ]
    for label, value in rows:
        print(f"{label:<44} {value:>10.1f}")
    print(f"startup (process, handshake, listing): {startup_ms:.0f} ms")
    print(
        f"RESULT mcp_call_us={mcp_us:.1f} local_call_us={local_us:.2f} ratio={mcp_us / local_us:.1f} "
        f"mcp_async_call_us={async_us:.1f} mcp_concurrent_call_us={concurrent_us:.1f} sdk_call_us={sdk_us:.1f} "
        f"over_sdk_us={mcp_us - sdk_us:.1f} startup_ms={startup_ms:.0f} quick={int(quick)}"
    )


if __name__ == "__main__":
    main()

"""What an agent step costs in CPU instructions: a measure that this machine's noise cannot move.

The speed of the shared development machine drifts by 2x within seconds, so timings (``agent_overhead.py``) cannot
show a change of a few percent. Instruction counts can: valgrind's cachegrind counts every instruction a process
executes, the same count on every run of the same code. Each figure is the difference between two processes
that do the same set-up and warm-up and then ``n`` and ``0`` runs, divided by the steps of those runs, so
interpreter start, imports and set-up cancel out.

- ``agent_instr_per_step``: one decision step (decision + tool, tracing on) of ``AgentBot(...)(q)``; the model
  replies instantly from a list (its own instructions are a few hundred per call, unlike the scripted model's
  usage estimates), so the figure is the framework's.
- ``async_instr_per_step``: the same through ``await AsyncAgentBot(...).arun(q)``, one run after another.
- ``pocketflow_instr_per_node``: one node step of a plain pocketflow loop (``agent_overhead.py``'s).
- ``instr_ratio``: ``agent_instr_per_step / pocketflow_instr_per_node``. Not the time ratio: a step of ours runs
  at fewer instructions per cycle than pocketflow's tiny loop (more code and objects per step), so the time ratio
  of ``agent_overhead.py`` is higher; this one moves only when the work done moves.
- ``otel_instr_per_step``: the agent step with every run exported to OpenTelemetry (``otel.instrument`` with the
  SDK, a ``SimpleSpanProcessor`` and the in-memory exporter, as ``agent_overhead.py``'s ``otel_ratio``), and
  ``otel_instr_ratio``: that over ``agent_instr_per_step``.
- ``sdk_floor_instr_per_span``: the SDK's own work per span exported that way, whoever maps it
  (``agent_overhead.sdk_exports``: span context, ``ReadableSpan``, the processor's ``on_end``), and
  ``otel_floor_instr_ratio``: the agent step plus that for each of its spans, over the agent step — the best
  ``otel_instr_ratio`` any mapping could reach.

Needs valgrind (``apt-get install valgrind``; ``.ci/run`` installs it). ``PYTHONHASHSEED=0`` makes the counts
repeatable to within a few instructions per step.

    python benchmarks/instructions.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from agent_overhead import OTEL_SPANS_PER_STEP as SPANS_PER_STEP
from agent_overhead import STEPS_PER_RUN

HERE = Path(__file__).resolve().parent
WARM_UP = 20

#: The agent probes' model: the scripted replies of ``agent_overhead.SCRIPT``, given at once (no usage estimates).
INSTANT = """
from agent_overhead import CALCULATOR_TOOLS, SCRIPT, AgentBot, AsyncAgentBot
from llamabot.models.reply import ModelReply, Usage

class Instant:
    name = "instant"
    replies = [ModelReply(r.content, r.tool_calls, Usage(10, 5, 0.0), "instant", r.finish_reason, 0.0) for r in SCRIPT]
    def complete(self, request, on_token=None):
        return self.replies[(len(request.messages) - 2) // 2]
    async def acomplete(self, request, on_token=None):
        return self.complete(request)
"""

#: What the measured process does, by kind: set-up, ``WARM_UP`` runs, then ``n`` more. ``{n}`` is filled in.
PROBES = {
    "agent": INSTANT + """
bot = AgentBot(tools=CALCULATOR_TOOLS, model=Instant())
for _ in range({warm} + {n}):
    bot.reset()
    assert bot("What is (2 + 3) * 7?") == "35"
""",
    "async": INSTANT + """
import asyncio

bot = AsyncAgentBot(tools=CALCULATOR_TOOLS, model=Instant())

async def main():
    for _ in range({warm} + {n}):
        assert await bot.arun("What is (2 + 3) * 7?") == "35"

asyncio.run(main())
""",
    "otel": INSTANT + """
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from llamabot.observe import otel

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
otel.instrument(provider)
bot = AgentBot(tools=CALCULATOR_TOOLS, model=Instant())
for _ in range({warm} + {n}):
    bot.reset()
    assert bot("What is (2 + 3) * 7?") == "35"
    exporter.clear()
""",
    "sdk_floor": """
from agent_overhead import sdk_exports
export = sdk_exports()
export({warm} * 10)
export({n})
""",
    "pocketflow": """
from agent_overhead import pocketflow_loop, pocketflow_node_sample
flow, _ = pocketflow_loop({warm} * 100 + {n})
pocketflow_node_sample(flow, {warm} * 100 + {n})
""",
}


def instructions(kind: str, n: int) -> int:
    """Instructions executed by a process running probe ``kind`` with ``n`` measured repetitions."""
    code = f"import sys\nsys.path.insert(0, {str(HERE)!r})\n" + PROBES[kind].format(warm=WARM_UP, n=n)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-c", code],
        capture_output=True, text=True, env=env, cwd=HERE.parent, check=False,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"the {kind} probe failed under valgrind (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_repetition(kind: str, n: int) -> float:
    """Instructions per repetition: the process with ``n`` repetitions minus the one with none, over ``n``."""
    return (instructions(kind, n) - instructions(kind, 0)) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs (smoke checks); also LLAMABOT_BENCH_QUICK=1")
    quick = parser.parse_args().quick or os.environ.get("LLAMABOT_BENCH_QUICK", "").lower() in ("1", "true", "yes", "on")
    if shutil.which("valgrind") is None:
        sys.exit("benchmarks/instructions.py needs valgrind: apt-get install valgrind (.ci/run does it)")
    runs, nodes = (20, 2000) if quick else (200, 20000)
    agent = per_repetition("agent", runs) / STEPS_PER_RUN
    async_agent = per_repetition("async", runs) / STEPS_PER_RUN
    node = per_repetition("pocketflow", nodes)
    exported = per_repetition("otel", runs) / STEPS_PER_RUN
    floor = per_repetition("sdk_floor", nodes // 4)
    floor_ratio = (agent + SPANS_PER_STEP * floor) / agent
    print(f"agent decision step (decision + tool, tracing on): {agent:9.0f} instructions")
    print(f"the same through arun:                             {async_agent:9.0f} instructions")
    print(f"plain pocketflow node step:                        {node:9.0f} instructions")
    print(f"one agent step = {agent / node:.2f} pocketflow node steps in instructions ({runs} runs, {nodes} nodes)")
    print(f"the agent step exporting to OpenTelemetry:         {exported:9.0f} instructions "
          f"-> {exported / agent:.2f} of the step without export")
    print(f"the SDK's own work per exported span:              {floor:9.0f} instructions, x {SPANS_PER_STEP:.2f} spans "
          f"per step -> the best ratio any mapping could reach: {floor_ratio:.2f}")
    print(f"RESULT agent_instr_per_step={agent:.0f} async_instr_per_step={async_agent:.0f} "
          f"pocketflow_instr_per_node={node:.0f} instr_ratio={agent / node:.3f} otel_instr_per_step={exported:.0f} "
          f"otel_instr_ratio={exported / agent:.3f} sdk_floor_instr_per_span={floor:.0f} "
          f"otel_floor_instr_ratio={floor_ratio:.3f} quick={int(quick)}")


if __name__ == "__main__":
    main()

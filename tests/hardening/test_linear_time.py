"""Issue #13, defects 1 and 8: parsing and execution take time linear in their input (HARD-LIN-*).

The worst inputs are the benchmark's (``benchmarks/parser_scaling.py``: the one catalogue of every parser of
model output and the inputs that made it hang). Here each is timed once at 20,000 characters against a budget
of a few milliseconds per kilobyte; the old code took seconds to minutes on them (``extract_tool_calls`` on an
unclosed fence of 2,000 blanks: 7 s). Execution is timed at n and 2n: a linear cost doubles, a quadratic one
quadruples.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llamabot.graph.layers import topological_layers
from llamabot.reasoning.anot.lwt import LWTStep
from llamabot.reasoning.anot.lwt import execution_layers as lwt_layers
from llamabot.reasoning.aot import Plan, execute_plan
from llamabot.toolkits.calculator import CALCULATOR_TOOLS

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("benchmark_parser_scaling", ROOT / "benchmarks" / "parser_scaling.py")
assert _spec is not None and _spec.loader is not None
parser_scaling = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(parser_scaling)  # (registered first: its dataclasses look their module up)

SIZE = 20_000
#: Milliseconds per kilobyte of input allowed to any parser (the slowest measures under 1 ms/kB).
MS_PER_KB = 5.0
#: The most a doubling of the input may multiply the time (linear: 2; quadratic: 4).
DOUBLING = 3.0


def best_time(call: Callable[[], Any], repeats: int = 3) -> float:
    """The fastest of ``repeats`` timings of ``call()``, in seconds (the machine is shared: take the best)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize("case", parser_scaling.WORST_INPUTS, ids=lambda c: f"{c.parser}:{c.kind}")
def test_hard_lin_010_every_parser_reads_its_worst_20000_character_input_in_a_few_ms_per_kb(case):
    text = case.make(SIZE)
    assert len(text) >= SIZE
    case.call(text)  # warm up
    elapsed = best_time(lambda: case.call(text))
    assert elapsed * 1000 / (len(text) / 1000) < MS_PER_KB, f"{case.parser} ({case.kind}): {elapsed * 1000:.1f} ms"


def _doubling(make: Callable[[int], Callable[[], Any]], n: int, attempts: int = 3) -> float:
    """Time of size 2n over size n. On a loaded machine one pair of timings can be off by more than the margin, so
    up to ``attempts`` pairs are taken and the smallest ratio counts: a quadratic cost doubles to ~4 every time."""
    small, large = make(n), make(2 * n)
    small()
    ratio = float("inf")
    for _ in range(attempts):
        ratio = min(ratio, best_time(large) / best_time(small))
        if ratio < DOUBLING:
            break
    return ratio


def _wide_plan(n: int) -> Callable[[], Any]:
    atoms = [{"id": i, "kind": "tool", "name": "add", "input": {"a": i, "b": 1}} for i in range(1, n)]
    plan = Plan.model_validate({"atoms": [*atoms, {"id": n, "kind": "final", "name": "report",
                                                   "dependsOn": list(range(1, n))}]})
    tools = {t.tool.name: t.tool for t in CALCULATOR_TOOLS}
    return lambda: execute_plan(plan, tools)


def _chain_plan(n: int) -> Callable[[], Any]:
    atoms = [{"id": 1, "kind": "tool", "name": "add", "input": {"a": 1, "b": 1}}]
    atoms += [{"id": i, "kind": "tool", "name": "add", "input": {"a": f"<result_of_{i - 1}>", "b": 1},
               "dependsOn": [i - 1]} for i in range(2, n)]
    plan = Plan.model_validate({"atoms": [*atoms, {"id": n, "kind": "final", "name": "report", "dependsOn": [n - 1]}]})
    tools = {t.tool.name: t.tool for t in CALCULATOR_TOOLS}
    return lambda: execute_plan(plan, tools)


def _lwt_chain(n: int) -> Callable[[], Any]:
    steps = [LWTStep("s0", "x"), *(LWTStep(f"s{i}", f"{{(s{i - 1})}}") for i in range(1, n))]
    return lambda: lwt_layers(steps)


def _two_node_cycles(n: int) -> Callable[[], Any]:
    graph = {node: [node ^ 1] for node in range(n)}

    def run() -> None:
        with pytest.raises(ValueError):
            topological_layers(graph)

    return run


@pytest.mark.parametrize(("make", "n"), [(_wide_plan, 2500), (_chain_plan, 2500), (_lwt_chain, 2500),
                                         (_two_node_cycles, 4000)],
                         ids=["aot-wide-plan", "aot-chain-plan", "anot-lwt-chain", "cycle-report"])
def test_hard_lin_020_execution_and_layering_double_in_time_when_the_plan_doubles(make, n):
    """Regression: ExecutionRecord.results rebuilt per atom (a 10k-atom wide plan took 9 s), ANoT layers on a
    5,000-step chain 12 s, and the cycle report asked graphlib again per cycle (2,000 nodes: 2 s)."""
    assert _doubling(make, n) < DOUBLING

"""Smoke tests for ``benchmarks/``: every script runs in quick mode and ends with a well-formed ``RESULT`` line.

No timing thresholds: speed is what the benchmarks measure, not what tests assert. Each script runs in a
subprocess (``sys.executable benchmarks/X.py --quick``) from the repository root, as a user would run it.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT_S = 300

#: The keys each script's RESULT line must carry (more are allowed).
EXPECTED_KEYS: dict[str, set[str]] = {
    "agent_overhead.py": {
        "step_us", "pocketflow_node_us", "step_vs_pocketflow", "concurrent_ratio", "concurrent_best_ratio",
        "concurrent_node_us", "pocketflow_concurrent_ratio", "concurrent_vs_pocketflow", "litellm_ratio", "reuse_ratio",
        "litellm_call_ms", "litellm_zero_cost_call_ms", "otel_ratio", "otel_noop_ratio", "otel_off_ratio",
        "otel_sdk_span_us", "otel_floor_us", "otel_floor_ratio", "otel_floor_run_ratio", "quick",
    },
    "concurrent_breakdown.py": {
        "asyncio_floor_ratio", "ratio_30ms", "ratio_50ms", "ratio_100ms", "ratio_200ms", "excess_50ms", "gc_cpu_ms",
        "gc_ratio_delta", "n", "quick",
    },
    "anot_parallel.py": {
        "parallel_ratio", "token_ratio", "token_ratio_full_context", "anot_prompt_tokens", "cot_prompt_tokens",
        "requests", "quick",
    },
    "aot_parallel.py": {"parallel_ratio", "parallel_ratio_threads", "sync_s", "quick"},
    "parser_scaling.py": {"worst_doubling_ratio", "worst_case", "worst_ms_per_kb", "n", "quick"},
    "import_time.py": {
        "llamabot_ms", "llamabot_bots_ms", "llamabot_agent_ms", "llamabot_cli_ms", "litellm_ms", "llamabot_vs_litellm",
        "quick",
    },
    "tot_overhead.py": {"update_us", "driver_step_us", "async_ratio", "quick"},
    "durable_overhead.py": {
        "durable_step_ratio_sqlite", "durable_step_ratio_postgres", "workers_ratio", "recovery_s",
        "dbos_idle_step_ms_sqlite", "dbos_idle_step_ms_postgres", "floor_ratio_sqlite", "floor_ratio_postgres", "quick",
    },
    "console_page.py": {
        "run_page_s", "run_page_browser_s", "run_page_all_s", "run_page_all_browser_s", "spans", "list_page_s",
        "list_deep_page_s", "runs", "quick",
    },
    "parallel_calls.py": {"sync_tool_ratio", "async_tool_ratio", "overhead_ms", "calls", "quick"},
    "mcp_overhead.py": {
        "mcp_call_us", "local_call_us", "ratio", "mcp_async_call_us", "sdk_call_us", "over_sdk_us", "mcp_cpu_us",
        "sdk_cpu_us", "over_sdk_cpu_us", "thread_hop_us", "quick",
    },
    "instructions.py": {
        "agent_instr_per_step", "async_instr_per_step", "pocketflow_instr_per_node", "instr_ratio",
        "otel_instr_per_step", "otel_instr_ratio", "sdk_floor_instr_per_span", "otel_floor_instr_ratio", "quick",
    },
    "embedded_model.py": {
        "stream_ratio", "nostream_ratio", "same_text", "cold_first_answer_s", "cached_first_answer_s",
        "first_answer_ratio", "tot_speedup", "quick",
    },
    "embedded_batching.py": {
        "cores", "prompt_tok_s_1", "prompt_tok_s_all", "gen_tok_s_1", "gen_tok_s_all", "gen_thread_ratio",
        "step4_gain", "step8_gain", "floor_2_gain", "floor_8_gain", "lone_ratio", "concurrent_2_ratio", "same_2",
        "quick",
    },
}


def run_benchmark(script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "LLAMABOT_BENCH_QUICK"}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, env=environment,
    )


def parse_result(stdout: str) -> dict[str, float]:
    """The key=value pairs of the one line starting with ``RESULT``, as numbers."""
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT")]
    assert len(lines) == 1, f"expected one RESULT line, got {lines!r}\n{stdout}"
    fields: dict[str, float] = {}
    for pair in lines[0].split()[1:]:
        key, sep, value = pair.partition("=")
        assert sep and key, f"not key=value: {pair!r} in {lines[0]!r}"
        try:
            fields[key] = float(value)
        except ValueError:
            pytest.fail(f"{key}={value!r} is not a number in {lines[0]!r}")
        assert math.isfinite(fields[key]), f"{key}={value!r} is not finite in {lines[0]!r}"
    return fields


def test_every_benchmark_has_a_smoke_test() -> None:
    assert {p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_")} == set(EXPECTED_KEYS)


#: Scripts that drive the real embedded model (marked ``local_model``).
LOCAL_MODEL_SCRIPTS = {"embedded_batching.py", "embedded_model.py"}


@pytest.mark.parametrize(
    "script", [pytest.param(s, marks=pytest.mark.local_model) if s in LOCAL_MODEL_SCRIPTS else s for s in sorted(EXPECTED_KEYS)]
)
def test_benchmark_quick_mode(script: str) -> None:
    result = run_benchmark(script, "--quick")
    assert result.returncode == 0, f"{script} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    fields = parse_result(result.stdout)
    assert EXPECTED_KEYS[script] <= set(fields), f"missing {EXPECTED_KEYS[script] - set(fields)} in {fields}"
    assert fields["quick"] == 1


def test_quick_mode_from_the_environment() -> None:
    """``LLAMABOT_BENCH_QUICK=1`` is quick mode without the flag (the cheapest script stands for all)."""
    result = run_benchmark("aot_parallel.py", env={"LLAMABOT_BENCH_QUICK": "1"})
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert parse_result(result.stdout)["quick"] == 1


def test_parser_scaling_times_every_worst_input_at_n_and_2n() -> None:
    """HARD-LIN-040: one table row per worst input of ``WORST_INPUTS`` (both timings and their ratio), and the
    RESULT line names the worst row."""
    result = run_benchmark("parser_scaling.py", "--quick")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    rows = [line.split() for line in result.stdout.splitlines() if line[:2].strip().isdigit()]
    fields = parse_result(result.stdout)
    assert len(rows) > 20 and [int(row[0]) for row in rows] == list(range(len(rows)))
    ratios = [float(row[-2]) for row in rows]
    assert all(r > 0 for r in ratios) and fields["worst_doubling_ratio"] == max(ratios)
    assert 0 <= fields["worst_case"] < len(rows) and fields["n"] == 5000  # quick mode keeps n above 4,300 digits

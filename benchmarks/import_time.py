"""Import cost: ``import llamabot`` and ``from llamabot import ...`` next to ``import litellm``.

Each import is timed in a fresh interpreter (median of N runs), side by side in one run, so the ratio is
meaningful on any machine. Ends with one ``RESULT`` line.

    python benchmarks/import_time.py [--runs 5] [--quick]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): one fresh interpreter per import instead of the median of 5, for
smoke checks (``quick=1`` in the ``RESULT`` line).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

SNIPPETS = {
    "python": "pass",
    "llamabot": "import llamabot",
    "llamabot_bots": "from llamabot import tool, SimpleBot, StructuredBot, ToolBot",
    "llamabot_agent": "from llamabot import AgentBot",
    "llamabot_cli": "import llamabot.cli",
    "litellm": "import litellm",
}


def time_import(code: str, runs: int) -> float | None:
    """Median wall time in ms of a fresh interpreter running ``code`` (minus nothing: the baseline row
    shows the interpreter's own start-up)."""
    program = (
        "import time; t = time.perf_counter()\n"
        f"{code}\n"
        "print((time.perf_counter() - t) * 1000)"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    samples = []
    for _ in range(runs):
        result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env)
        if result.returncode != 0:
            return None
        samples.append(float(result.stdout.strip().splitlines()[-1]))
    return statistics.median(samples)


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=None, help="fresh interpreters per import (default 5; 1 in quick mode)")
    parser.add_argument("--quick", action="store_true", help="far fewer repetitions (smoke checks); also LLAMABOT_BENCH_QUICK=1")
    args = parser.parse_args()
    quick = quick_mode(args.quick)
    runs = args.runs if args.runs is not None else (1 if quick else 5)
    if quick:
        print(f"quick mode: {runs} run(s) per import")
    times = {name: time_import(code, runs) for name, code in SNIPPETS.items()}
    print(f"{'import':<16} {'median ms':>10}")
    for name, ms in times.items():
        print(f"{name:<16} {('n/a' if ms is None else f'{ms:10.1f}'):>10}")
    litellm_ms = times["litellm"] or float("nan")
    fields = {f"{k}_ms": ("na" if v is None else f"{v:.1f}") for k, v in times.items() if k != "python"}
    fields["llamabot_vs_litellm"] = f"{(times['llamabot'] or float('nan')) / litellm_ms:.3f}"
    fields["quick"] = str(int(quick))
    print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()))


if __name__ == "__main__":
    main()

"""Tree-of-Thoughts framework overhead: what the machine and the driver cost per model call.

- ``update_us``: one pure ``update`` of the machine (thoughts in, or scores in), median over a full search;
- ``driver_step_us``: framework time per model call of ``ToTBot`` (expand + call node + tracing), with a scripted
  model behind the model seam, model time excluded;
- ``async_ratio``: 200 concurrent searches on one ``AsyncToTBot`` whose model answers after 20 ms, wall time over
  the ideal (the longest search's number of calls x 20 ms).

The model is instant or sleeps; the numbers are the framework's own cost, not the model's.

    python benchmarks/tot_overhead.py [--quick]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): 5 rounds and 50 concurrent searches instead of 30 and 200, for
smoke checks. Ends with one ``RESULT`` line (``quick=1`` when made in quick mode).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

from llamabot.models.reply import ModelReply, ModelRequest
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.reasoning.tot.graph import AsyncToTBot, ToTBot
from llamabot.reasoning.tot.machine import new_machine, update
from llamabot.reasoning.tot.messages import GenerateThoughts, Start, ThoughtsEvaluated, ThoughtsGenerated

OPTIONS = {"branching_factor": 3, "max_depth": 3, "min_depth": 3, "convergence_window": 1,
           "early_success_threshold": 2.0, "max_nodes": 40}


def responder(request: ModelRequest) -> ModelReply:
    schema = request.response_format["json_schema"]
    if schema["name"] == "tot_thoughts":
        return json_reply({"thoughts": ["step a", "step b", "step c"][: schema["schema"]["properties"]["thoughts"]["maxItems"]]})
    ids = schema["schema"]["properties"]["scores"]["required"]
    return json_reply({"scores": {thought_id: 0.1 * (index + 3) for index, thought_id in enumerate(ids)}})


class TimedModel:
    """Wraps a chat model and accumulates the time spent inside it, so it can be excluded."""

    def __init__(self, inner: Any):
        self.inner, self.name, self.spent, self.calls = inner, inner.name, 0.0, 0

    def complete(self, request, on_token=None):
        started = time.perf_counter()
        reply = self.inner.complete(request, on_token)
        self.spent += time.perf_counter() - started
        self.calls += 1
        return reply

    async def acomplete(self, request, on_token=None):
        return await self.inner.acomplete(request, on_token)


def update_us(rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        machine, directives = update(new_machine(**OPTIONS), Start("problem", "run"))
        while directives:
            d = directives[0]
            if isinstance(d, GenerateThoughts):
                msg = ThoughtsGenerated(d.call_id, tuple(f"{len(machine.nodes)}.{i}" for i in range(d.count)))
            else:
                msg = ThoughtsEvaluated(d.call_id, {t.id: 0.5 for t in d.thoughts})
            started = time.perf_counter()
            machine, directives = update(machine, msg)
            samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def driver_step_us(rounds: int) -> float:
    model = TimedModel(ScriptedModel(responder=responder, record=False))
    bot = ToTBot(model=model, **OPTIONS)
    bot("warm up")
    model.spent, model.calls = 0.0, 0
    started = time.perf_counter()
    for _ in range(rounds):
        bot("problem")
    total = time.perf_counter() - started
    return (total - model.spent) / model.calls * 1e6


def async_ratio(runs: int, latency: float) -> float:
    model = ScriptedModel(responder=responder, latency_s=latency, record=False)
    bot = AsyncToTBot(model=model, **OPTIONS)

    async def main() -> tuple[float, int]:
        started = time.perf_counter()
        results = await asyncio.gather(*(bot.arun(f"problem {i}") for i in range(runs)))
        # two calls (generate, evaluate) per expanded node
        longest = max(2 * sum(1 for n in r.machine.nodes.values() if n.children) for r in results)
        return time.perf_counter() - started, longest

    wall, longest_calls = asyncio.run(main())
    return wall / (longest_calls * latency)


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="far fewer repetitions (smoke checks); also LLAMABOT_BENCH_QUICK=1")
    args = parser.parse_args()
    quick = quick_mode(args.quick)
    rounds = 5 if quick else 30
    searches = 50 if quick else 200
    if quick:
        print(f"quick mode: {rounds} rounds, {searches} concurrent searches")
    update_cost = update_us(rounds)
    print(f"update_us        {update_cost:8.1f}")
    driver = driver_step_us(rounds)
    print(f"driver_step_us   {driver:8.1f}")
    ratio = async_ratio(searches, 0.02)
    print(f"async_ratio      {ratio:8.2f}")
    print(f"RESULT update_us={update_cost:.2f} driver_step_us={driver:.1f} async_ratio={ratio:.3f} quick={int(quick)}")


if __name__ == "__main__":
    main()

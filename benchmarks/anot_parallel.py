"""ANoT phase 3 parallelism and ANoT's prompt tokens against the CoT baseline.

- ``parallel_ratio``: an LWT script of 10 independent condition steps plus a final step that reads all of them,
  run by ``AsyncANoTBot.aexecute`` on a scripted model with 100 ms latency per call: wall time over the ideal
  200 ms (two layers). Median of ``--repeats`` runs. Target: at most 1.1. The run ranks by the final step
  (``rank_by="final"``), so the final step, which reads all ten condition outputs, runs in the second layer
  (under the default ``rank_by="scores"`` it runs only when no condition step listed an item); each run also
  checks the score ranking (no strategy here, so votes: every condition step lists items 1 and 3).
- ``token_ratio``: prompt tokens per request of ANoT over those of the CoT baseline, on the dev requests
  (``--data``, 10 candidates, seed 0). Both methods run on a scripted model, so the prompts are exactly the ones
  each method sends, and every prompt is counted with LiteLLM's ``litellm.token_counter`` (messages plus tool
  schemas; for the ``local/`` model name LiteLLM falls back to its default OpenAI tokenizer, tiktoken
  ``cl100k_base``). The scripted ANoT run takes the shortest path: phase 1 answers the request's reference
  strategy (built from its ground-truth ``structure``), phase 2's agent calls ``done()`` on the draft at once,
  phase 3 answers each step with a short list. Real models may take more phase 2 turns: the CLI's JSON report
  has the measured tokens of real runs. ``token_ratio_full_context`` compares with a CoT prompt holding every
  item in full (all reviews), i.e. without the baseline's token budget.

    python benchmarks/anot_parallel.py [--data DIR] [--repeats 5] [--quick]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): one parallel run and the tokens of the first ``QUICK_REQUESTS``
requests only (seconds), for smoke checks; its token figures are on that subset.

Prints the figures (the only asserts check that the runs did what they measure). Ends with one ``RESULT``
line (``quick=1`` when made in quick mode).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any

from llamabot import ScriptedModel
from llamabot.evals.anot import CoTBot, load_dataset
from llamabot.evals.anot.cot import COT_SYSTEM, COT_USER, render_items_budgeted
from llamabot.evals.anot.data import Dataset, Request, parse_attribute, select_candidates
from llamabot.models.reply import ModelRequest
from llamabot.models.scripted import json_reply, text, tool_call
from llamabot.reasoning.anot import ANoTBot, AsyncANoTBot

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "philly_cafes_dev"
FALLBACK_DATA = ROOT / "tests" / "fixtures" / "anot" / "philly_cafes_mini"
LATENCY_S = 0.1
COUNT_MODEL = "local/qwen2.5-coder-1.5b"
QUICK_REQUESTS = 3


# -- parallelism -------------------------------------------------------------------------------------------

PARALLEL_SCRIPT = "\n".join(
    [f"(c{i})=LLM('Condition {i} per item: {{(items)}}[*][name]. Which match? Output: [indices]')" for i in range(1, 11)]
    + ["(final)=LLM('" + ", ".join(f"c{i}={{(c{i})}}" for i in range(1, 11)) + ". Output top-5: [best, ...]')"]
)


def parallel_responder(request: ModelRequest) -> Any:
    return text("[1, 2, 3, 4, 5]" if request.last_user_text.startswith("c1=") else "[1, 3]")


def bench_parallel(repeats: int) -> tuple[float, list[float]]:
    items = [{"name": f"cafe {i}"} for i in range(1, 11)]
    walls = []
    for _ in range(repeats):
        bot = AsyncANoTBot(model=ScriptedModel(responder=parallel_responder, latency_s=LATENCY_S, record=False), debug=0, concurrency=10,
                            rank_by="final")
        started = time.perf_counter()
        result = asyncio.run(bot.aexecute(PARALLEL_SCRIPT, items))
        walls.append(time.perf_counter() - started)
        check_parallel_result(result)
    return statistics.median(walls) / (2 * LATENCY_S), walls


def check_parallel_result(result: Any) -> None:
    """The run did the whole job under ``rank_by="final"`` (the final step runs only when its output decides the
    ranking): all ten condition steps and the final step answered, the ranking is the final step's, and the
    score ranking is the one by condition votes (items 1 and 3 are listed by every condition step)."""
    assert set(result.outputs) == {f"c{i}" for i in range(1, 11)} | {"final"}, sorted(result.outputs)
    assert result.ranking == result.final_ranking and result.final_ranking.parsed == (1, 2, 3, 4, 5), result.ranking
    assert result.score_ranking.source == "scores", result.score_ranking
    assert result.score_ranking.top(2) == (1, 3), result.score_ranking


# -- tokens ------------------------------------------------------------------------------------------------


def _leaves(node: dict[str, Any]) -> list[dict[str, Any]]:
    if "op" in node:
        return [leaf for arg in node.get("args", []) for leaf in _leaves(arg)]
    return [node]


def reference_strategy(request: Request, n_items: int) -> dict[str, Any]:
    """A strategy read off the request's ground-truth ``structure`` (what a perfect phase 1 would write)."""
    conditions = []
    for index, leaf in enumerate(_leaves(request.structure), start=1):
        evidence = leaf.get("evidence", {})
        path = list(evidence.get("path") or [])
        kind = evidence.get("kind", "")
        if kind.startswith("item_meta") and path:
            contains = str(evidence.get("contains", ""))
            if path[-1] in ("Ambience", "GoodForMeal") and ":" in contains:
                key, _, value = contains.partition(":")
                path.append(key.strip(" '\""))
                condition_type, expected = ("AMBIENCE" if path[-2] == "Ambience" else "MEAL"), value.strip()
            elif path[0] == "hours":
                condition_type, expected = "HOURS", f"open {evidence.get('true', '')}"
            elif "not_true" in evidence:
                condition_type, expected = "ATTR", f"not {parse_attribute(evidence['not_true'])}"
            elif "true" in evidence:
                condition_type, expected = "ATTR", str(parse_attribute(evidence["true"]))
            else:
                condition_type, expected = "ATTR", f"contains {contains}"
        else:
            condition_type, path = "REVIEW_TEXT", ["reviews"]
            expected = str(evidence.get("pattern") or evidence.get("topic") or leaf.get("aspect", "good"))
        conditions.append({"request_words": leaf.get("aspect", ""), "id": index, "type": condition_type, "path": ".".join(path), "expected": expected[:80]})
    op = request.structure.get("op", "AND") if request.structure.get("op") in ("AND", "OR") else "AND"
    logic = f"{op}({', '.join(str(c['id']) for c in conditions)})"
    return {"conditions": conditions, "logic": logic, "total_items": n_items, "message": request.shorthand[:200]}


def anot_responder(strategy: dict[str, Any]):
    def respond(request: ModelRequest) -> Any:
        if request.response_format:
            return json_reply(strategy)
        if request.tools:
            return tool_call("done")
        return text("[1, 2, 3, 4, 5]" if "top-5" in request.last_user_text else "[2, 5]")

    return respond


def count_tokens(litellm: Any, request: ModelRequest) -> int:
    return litellm.token_counter(model=COUNT_MODEL, messages=request.messages, tools=request.tools or None)


def bench_tokens(dataset: Dataset, candidates: int, max_requests: int | None = None) -> dict[str, Any]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    requests = list(dataset.requests)[:max_requests]
    anot_totals, cot_totals, full_totals, phases = [], [], [], {"P1": 0, "P2": 0, "P3": 0}
    for request in requests:
        chosen = select_candidates(len(dataset.items), request.gold_idx, candidates, 0, request.id)
        items = [dataset.items[i] for i in chosen]
        anot_model = ScriptedModel(responder=anot_responder(reference_strategy(request, len(items))))
        ANoTBot(model=anot_model, debug=0)(request.text, items)
        per_request = 0
        for sent in anot_model.requests:
            tokens = count_tokens(litellm, sent)
            per_request += tokens
            phase = "P1" if sent.response_format else "P2" if sent.tools else "P3"
            phases[phase] += tokens
        anot_totals.append(per_request)
        cot_model = ScriptedModel([text("[1, 2, 3, 4, 5]")])
        CoTBot(model=cot_model, debug=0)(request.text, items)
        cot_totals.append(sum(count_tokens(litellm, sent) for sent in cot_model.requests))
        full = COT_USER.format(query=request.text, items=render_items_budgeted(items, 10**9))
        full_totals.append(
            litellm.token_counter(model=COUNT_MODEL, messages=[{"role": "system", "content": COT_SYSTEM}, {"role": "user", "content": full}])
        )
    n = len(requests)
    return {
        "requests": n,
        "anot": sum(anot_totals) / n,
        "cot": sum(cot_totals) / n,
        "full": sum(full_totals) / n,
        "phases": {k: v / n for k, v in phases.items()},
    }


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA if DEFAULT_DATA.is_dir() else FALLBACK_DATA)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=None, help="parallel runs (default 5; 1 in quick mode)")
    parser.add_argument("--quick", action="store_true", help="far fewer repetitions (smoke checks); also LLAMABOT_BENCH_QUICK=1")
    args = parser.parse_args()
    quick = quick_mode(args.quick)
    repeats = args.repeats if args.repeats is not None else (1 if quick else 5)
    if quick:
        print(f"quick mode: {repeats} parallel run(s), tokens of the first {QUICK_REQUESTS} requests")

    parallel_ratio, walls = bench_parallel(repeats)
    print(f"phase 3, 10 independent steps + final, {LATENCY_S * 1000:.0f} ms per call: "
          f"wall {', '.join(f'{w * 1000:.1f}' for w in walls)} ms; ideal {2 * LATENCY_S * 1000:.0f} ms; "
          f"ratio {parallel_ratio:.3f} (target <= 1.1)")

    dataset = load_dataset(args.data)
    tokens = bench_tokens(dataset, min(args.candidates, len(dataset.items)), QUICK_REQUESTS if quick else None)
    token_ratio = tokens["anot"] / tokens["cot"]
    full_ratio = tokens["anot"] / tokens["full"]
    print(f"prompt tokens per request on {dataset.name} ({tokens['requests']} requests, {args.candidates} candidates, "
          f"litellm.token_counter, default OpenAI tokenizer): anot {tokens['anot']:.0f} "
          f"(P1 {tokens['phases']['P1']:.0f}, P2 {tokens['phases']['P2']:.0f}, P3 {tokens['phases']['P3']:.0f}), "
          f"cot {tokens['cot']:.0f} (budgeted), cot with every item in full {tokens['full']:.0f}")
    print(f"token ratio anot/cot {token_ratio:.3f} (target <= 0.3); anot/full-context cot {full_ratio:.3f}")
    print(
        f"RESULT parallel_ratio={parallel_ratio:.3f} token_ratio={token_ratio:.3f} "
        f"token_ratio_full_context={full_ratio:.3f} anot_prompt_tokens={tokens['anot']:.0f} "
        f"cot_prompt_tokens={tokens['cot']:.0f} requests={tokens['requests']} quick={int(quick)}"
    )


if __name__ == "__main__":
    main()

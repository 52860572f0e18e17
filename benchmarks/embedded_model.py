"""The embedded model against raw llama-cpp-python, measured in the same run on the same loaded model.

- ``stream_ratio`` / ``nostream_ratio``: tokens per second of a ``local/`` call through the model seam
  (``call_model``, with and without ``on_token``; the batching scheduler decoding) over raw
  ``Llama.create_completion`` on a ``Llama`` of the same file and settings and the same rendered prompt (``stream=True`` / ``False``); the two run back to back ``reps`` times
  (which goes first alternates) and the ratio is the median of the pairs' ratios, so load from other processes
  hits both alike. ``*_cpu_ratio``: the same with tokens per CPU second of the process (all threads), which
  outside load disturbs far less. Greedy decoding: both sides write the same tokens (``same_text=1``).
- ``cold_first_answer_s`` / ``cached_first_answer_s``: the reference agent's answer to "What is 23 times 19?"
  in a fresh process (model load included), first with an empty prompt-prefix cache, then with the cache that
  first run filled; ``first_answer_ratio`` = cached / cold.
- ``tot_speedup``: one fixed Tree-of-Thoughts search (greedy, fixed node budget) is recorded, then its model calls
  (same requests, same order, each reply's token budget) are replayed without and with the in-process
  multi-prefix cache, once each; the ratio of the wall times. The persistent cache is off in both, and
  llama.cpp's own reuse of the previous call's prefix is on in both.

    python benchmarks/embedded_model.py [--quick] [--model local/qwen2.5-coder-1.5b]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): the 0.5B model, 16 tokens, 1 repetition, a 1-iteration agent and a
2-call search (which has nothing to reuse: a smoke check, not a measurement). Prefix caches live in a temporary
directory (the user's cache is not touched). Ends with one ``RESULT`` line (``quick=1`` when made in quick mode).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTION = "What is 23 times 19?"
ESSAY = "Write a long, detailed essay about the history of computing, from the abacus to modern GPUs."

CHILD = """
import json, sys, time
started = time.perf_counter()
from llamabot import AgentBot
from llamabot.toolkits.calculator import CALCULATOR_TOOLS
bot = AgentBot(tools=CALCULATOR_TOOLS, model_name=sys.argv[1], max_iterations=int(sys.argv[2]))
answer = bot(sys.argv[3])
print("CHILD " + json.dumps({"answer": str(answer), "seconds": time.perf_counter() - started}))
"""


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def throughput(model_name: str, tokens: int, reps: int) -> dict[str, float]:
    """Raw llama-cpp-python and the seam back to back (order alternating), streaming and not, ``reps`` pairs each;
    medians of the pair ratios of tokens per second (wall, and CPU time of this process)."""
    from llamabot.models.local.model import local_alias
    from llamabot.models.local.runtime import loaded_model
    from llamabot.models.reply import ModelRequest
    from llamabot.models.resolve import get_model
    from llamabot.models.seam import call_model

    model = get_model(model_name)
    from llama_cpp import Llama

    loaded = loaded_model(local_alias(model_name))
    settings = loaded.settings
    llm = Llama(model_path=loaded.path, n_ctx=settings.n_ctx, n_batch=settings.n_batch, n_threads=settings.n_threads,
                n_threads_batch=settings.n_threads, verbose=False)
    messages = [{"role": "user", "content": ESSAY}]
    prompt = loaded.formatter(messages=messages).prompt
    request = ModelRequest(
        model=model_name, messages=messages, params={"max_tokens": tokens, "temperature": 0.0}
    )

    def count(text: str) -> int:
        return len(llm.tokenize(text.encode(), add_bos=False, special=True))

    def timed(call) -> tuple[float, float, str]:  # noqa: ANN001
        """(tokens per wall second, tokens per CPU second of this process, text) of one call."""
        wall, cpu = time.perf_counter(), time.process_time()
        text = call()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        n = count(text)
        return n / wall, n / max(cpu, 1e-9), text

    def raw(stream: bool) -> tuple[float, float, str]:
        if stream:
            return timed(
                lambda: "".join(
                    c["choices"][0]["text"]
                    for c in llm.create_completion(prompt, max_tokens=tokens, temperature=0.0, stream=True)
                )
            )
        return timed(
            lambda: llm.create_completion(prompt, max_tokens=tokens, temperature=0.0)["choices"][0]["text"]
        )

    def ours(stream: bool) -> tuple[float, float, str]:
        pieces: list[str] = []
        return timed(lambda: call_model(model, request, pieces.append if stream else None).content or "")

    ours(True), raw(True)  # warm up: model loaded, prompt in the context for both sides
    pairs: dict[str, list[tuple[float, float, float, float]]] = {"stream": [], "nostream": []}
    texts: set[str] = set()
    for rep in range(reps):
        for stream in (True, False):
            order = (("raw", raw), ("ours", ours)) if rep % 2 == 0 else (("ours", ours), ("raw", raw))
            measured = {}
            for side, fn in order:
                rate, cpu_rate, text = fn(stream)
                measured[side] = (rate, cpu_rate)
                texts.add(text)
            pairs["stream" if stream else "nostream"].append((*measured["ours"], *measured["raw"]))
    result = {"same_text": float(len(texts) == 1)}
    for mode, rows in pairs.items():
        # Each pair ran back to back, under the same outside load: the median of the pair ratios.
        result[f"{mode}_ratio"] = statistics.median(o / r for o, _, r, _ in rows)
        result[f"{mode}_cpu_ratio"] = statistics.median(o / r for _, o, _, r in rows)
        result[f"ours_{mode}_tok_s"] = statistics.median(o for o, _, _, _ in rows)
        result[f"raw_{mode}_tok_s"] = statistics.median(r for _, _, r, _ in rows)
    return result


def first_answer(model_name: str, cache: Path, iterations: int) -> tuple[float, str]:
    """The agent's answer in a fresh process with the prefix cache in ``cache``: seconds inside the process
    (imports, model load and the run) and the answer."""
    env = {**os.environ, "LLAMABOT_PREFIX_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, model_name, str(iterations), QUESTION],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("CHILD ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"agent run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    result = json.loads(lines[0][len("CHILD ") :])
    return result["seconds"], result["answer"]


def tot_replays(model_name: str, quick: bool) -> dict[str, float]:
    """One fixed ToT search (greedy), recorded; then its model calls, the same requests in the same order with
    each reply's token budget, replayed once without and once with the in-process multi-prefix cache.

    Replaying the recorded requests keeps the work equal on both sides: a live search with the cache would
    evaluate its prompts in other chunks, and llama.cpp's numerics (hence greedy text) depend on chunking.
    """
    from dataclasses import replace

    from llamabot.models.local.model import local_alias
    from llamabot.models.local.prefix_cache import MemoryPrefixCache
    from llamabot.models.local.runtime import loaded_model
    from llamabot.models.resolve import get_model
    from llamabot.models.seam import call_model
    from llamabot.reasoning.tot.graph import ToTBot

    loaded = loaded_model(local_alias(model_name))
    loaded.disk = None

    def fresh(memory_on: bool) -> None:
        loaded.memory = MemoryPrefixCache(loaded.settings.memory_bytes) if memory_on else None
        loaded.scheduler.forget()  # every pass starts from an empty context

    options = (
        {"branching_factor": 2, "max_depth": 1, "min_depth": 1, "max_nodes": 3}
        if quick
        else {"branching_factor": 2, "max_depth": 2, "min_depth": 2, "max_nodes": 7}
    )
    fresh(False)
    bot = ToTBot(model=model_name, temperature=0.0, max_tokens=96, **options)
    started = time.perf_counter()
    bot("Plan how to sort 1,000,000 integers that each lie between 0 and 999, using little memory.")
    search_s = time.perf_counter() - started
    calls = [
        replace(
            span.attributes["request"],
            params={
                **span.attributes["request"].params,
                "max_tokens": max(1, span.attributes["reply"].usage.completion_tokens),
            },
        )
        for span in bot.last_trace.of_kind("model_call")
    ]
    model = get_model(model_name)
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(1):
        for memory_on in (False, True):
            fresh(memory_on)
            started = time.perf_counter()
            for request in calls:
                call_model(model, request)
            times[memory_on].append(time.perf_counter() - started)
    loaded.memory = MemoryPrefixCache(loaded.settings.memory_bytes)
    without, with_cache = statistics.median(times[False]), statistics.median(times[True])
    return {
        "tot_search_s": search_s,
        "tot_calls": float(len(calls)),
        "tot_without_s": without,
        "tot_with_s": with_cache,
        "tot_speedup": without / with_cache,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="0.5B model, fewer tokens and repetitions; also LLAMABOT_BENCH_QUICK=1",
    )
    parser.add_argument(
        "--model", default=None, help="local/<alias or path.gguf> (default: 1.5B, or 0.5B in quick mode)"
    )
    args = parser.parse_args()
    quick = quick_mode(args.quick)
    model_name = args.model or ("local/qwen2.5-coder-0.5b" if quick else "local/qwen2.5-coder-1.5b")
    tokens, reps, iterations = (16, 1, 1) if quick else (128, 5, 8)
    print(f"model {model_name}, {tokens} tokens x {reps} alternations, quick={int(quick)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="llamabot-bench-") as tmp:
        os.environ["LLAMABOT_PREFIX_CACHE_DIR"] = str(Path(tmp) / "parent")
        speed = throughput(model_name, tokens, reps)
        print("throughput " + " ".join(f"{k}={v:.2f}" for k, v in speed.items()), flush=True)
        cache = Path(tmp) / "fresh"
        cold, cold_answer = first_answer(model_name, cache, iterations)
        cached, cached_answer = first_answer(model_name, cache, iterations)
        print(
            f"first answer: cold {cold:.1f} s ({cold_answer!r}), cached {cached:.1f} s ({cached_answer!r})",
            flush=True,
        )
        tot = tot_replays(model_name, quick)
        print("ToT " + " ".join(f"{k}={v:.2f}" for k, v in tot.items()), flush=True)
    print(
        f"RESULT stream_ratio={speed['stream_ratio']:.3f} nostream_ratio={speed['nostream_ratio']:.3f} "
        f"stream_cpu_ratio={speed['stream_cpu_ratio']:.3f} nostream_cpu_ratio={speed['nostream_cpu_ratio']:.3f} "
        f"raw_stream_tok_s={speed['raw_stream_tok_s']:.2f} ours_stream_tok_s={speed['ours_stream_tok_s']:.2f} "
        f"same_text={speed['same_text']:.0f} cold_first_answer_s={cold:.2f} cached_first_answer_s={cached:.2f} "
        f"first_answer_ratio={cached / cold:.3f} answer_has_437={int('437' in cached_answer)} "
        f"tot_calls={tot['tot_calls']:.0f} tot_without_s={tot['tot_without_s']:.2f} "
        f"tot_with_s={tot['tot_with_s']:.2f} tot_speedup={tot['tot_speedup']:.3f} "
        f"quick={int(quick)}"
    )


if __name__ == "__main__":
    main()

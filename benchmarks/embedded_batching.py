"""The embedded model's use of the machine: threads, and what batching gains (issue #38), side by side in one run.

- **Engine table** (raw llama-cpp-python, the same GGUF loaded once per thread count, ``Llama.eval`` on token
  ids, no sampling): prompt tokens/s (a ~512-token prompt in ``n_batch`` chunks), and decoding tokens/s with 1, 4
  and 8 positions per step of one sequence, logits for the last only, for 1 thread and for every usable core.
  ``gen_thread_ratio``: one position per step with every core over 1 thread.
- **Batched decoding floor** (llama.cpp's C API, the scheduler's context settings, every core): one step carries
  one token for each of k = 1, 2, 4, 8 sequences, each with its logits (what continuous batching must compute);
  ``floor_<k>_gain`` = tokens/s at k over k = 1. This is the engine's own ceiling for ``concurrent_<k>_ratio``:
  logits rows cost (151,936 x 1,536 per token for Qwen2.5-1.5B), which the positions-per-step table omits.
- ``lone_ratio``: one request through the model seam (``call_model`` on ``local/...``, greedy, ``max_tokens``
  tokens) in a process with ``LLAMABOT_LOCAL_THREADS`` left at its default, over the same request in a process
  with ``LLAMABOT_LOCAL_THREADS=1`` (the default before issue #38 on two cores); the two run alternately, ``reps``
  pairs, median of the pairs' ratios of tokens per second.
- ``concurrent_<n>_ratio``: ``n`` agent-style requests sent at once from ``n`` threads through the seam (the
  scheduler decodes them in one batch, ``LLAMABOT_LOCAL_SEQUENCES`` at a time): aggregate tokens per second over
  the same requests sent one by one, same process and thread count; ``reps`` pairs (the order alternates),
  median of the pairs' ratios. ``same_<n>``: the share of the batched answers equal to the same request's answer
  alone (greedy; llama.cpp's batched kernels round differently, so a few differ).

    python benchmarks/embedded_batching.py [--quick] [--model local/qwen2.5-coder-1.5b]

``--quick`` (or ``LLAMABOT_BENCH_QUICK=1``): the 0.5B model, fewer tokens and one pair: a smoke check, not a
measurement. Ends with one ``RESULT`` line (``quick=1`` when made in quick mode).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "Explain, step by step and in detail, how a compiler turns source code into machine code. " * 24
QUESTIONS = ["What is 23 times 19?", "Name three prime numbers above 50.", "What is the capital of Peru?",
             "Convert 3 km to metres.", "What is 144 divided by 12?", "Spell 'banana' backwards.",
             "What is 2 to the power of 10?", "Which is larger, 0.3 or 0.25?"]

LONE = """
import json, sys, time
from llamabot.models.reply import ModelRequest
from llamabot.models.resolve import get_model
from llamabot.models.seam import call_model
name, tokens, question = sys.argv[1], int(sys.argv[2]), sys.argv[3]
model = get_model(name)
request = ModelRequest(model=name, messages=[{"role": "user", "content": question}],
                       params={"max_tokens": tokens, "temperature": 0.0})
call_model(model, request)  # warm: the model loaded, the prompt in the context
started = time.perf_counter()
reply = call_model(model, request)
seconds = time.perf_counter() - started
print("CHILD " + json.dumps({"tokens": reply.usage.completion_tokens, "seconds": seconds}))
"""
LONE_QUESTION = QUESTIONS[0] + " Explain your reasoning in detail."


def quick_mode(flag: bool) -> bool:
    """``--quick`` or ``LLAMABOT_BENCH_QUICK=1`` (also true/yes/on)."""
    return flag or os.environ.get("LLAMABOT_BENCH_QUICK", "").strip().lower() in ("1", "true", "yes", "on")


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def engine_row(path: str, threads: int, steps: int) -> dict[str, float]:
    """Tokens per second of prompt processing and of decoding 1, 4 and 8 positions per step, at ``threads``."""
    from llama_cpp import Llama

    llm = Llama(model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads, n_batch=512,
                verbose=False)
    try:
        prompt = llm.tokenize(PROMPT.encode())[:512]
        row = {}
        llm.reset()
        started = time.perf_counter()
        llm.eval(prompt)
        row["prompt"] = len(prompt) / (time.perf_counter() - started)
        base = prompt[:64]
        for k in (1, 4, 8):
            llm.reset()
            llm.eval(base)
            started = time.perf_counter()
            for step in range(steps):
                llm.eval([base[(step * k + i) % len(base)] for i in range(k)])
            row[f"step{k}"] = steps * k / (time.perf_counter() - started)
        return row
    finally:
        llm.close()


def floor_gains(path: str, threads: int, steps: int) -> dict[int, float]:
    """Tokens per second decoding one token for each of k sequences per step, each with logits, over k = 1."""
    import llama_cpp
    from llama_cpp import Llama

    holder = Llama(model_path=path, n_ctx=64, n_batch=64, verbose=False)
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = 4096, 512, 512, 8
    params.n_threads = params.n_threads_batch = threads
    params.kv_unified, params.flash_attn_type = True, llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    ctx = llama_cpp.llama_init_from_model(holder.model, params)
    batch = llama_cpp.llama_batch_init(512, 0, 1)
    positions = [0] * 8

    def decode(items: list[tuple[int, int]], logits_last_only: bool = False) -> None:
        for i, (token, seq) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, positions[seq], 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = i == len(items) - 1 if logits_last_only else True
            positions[seq] += 1
        batch.n_tokens = len(items)
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")

    try:
        for seq in range(8):
            decode([(100 + i, seq) for i in range(64)], logits_last_only=True)
        rates = {}
        for k in (1, 2, 4, 8):
            started = time.perf_counter()
            for _ in range(steps):
                decode([(200, seq) for seq in range(k)])
            rates[k] = steps * k / (time.perf_counter() - started)
        return {k: rate / rates[1] for k, rate in rates.items()}
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)
        holder.close()


def lone_pairs(model_name: str, tokens: int, reps: int) -> list[float]:
    """Ratios (default threads over 1 thread) of tokens per second of one request, in fresh processes, alternating."""
    def child(env_threads: str | None) -> float:
        env = {k: v for k, v in os.environ.items() if k != "LLAMABOT_LOCAL_THREADS"}
        if env_threads is not None:
            env["LLAMABOT_LOCAL_THREADS"] = env_threads
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        done = subprocess.run([sys.executable, "-c", LONE, model_name, str(tokens), LONE_QUESTION], env=env, capture_output=True,
                              text=True, timeout=600, cwd=ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"the child failed:\n{done.stderr[-3000:]}")
        line = next(x for x in done.stdout.splitlines() if x.startswith("CHILD "))
        data = json.loads(line[6:])
        return data["tokens"] / data["seconds"]

    ratios = []
    for rep in range(reps):
        if rep % 2 == 0:
            one = child("1")
            default = child(None)
        else:
            default = child(None)
            one = child("1")
        ratios.append(default / one)
        print(f"lone request: default threads {default:.1f} tok/s, 1 thread {one:.1f} tok/s", flush=True)
    return ratios


def concurrent_ratio(model_name: str, n: int, tokens: int, reps: int) -> tuple[float, float]:
    """Aggregate tokens/s of ``n`` requests sent at once over the same ``n`` requests sent one by one (median of
    ``reps`` pairs, order alternating), and the share of batched answers equal to the answer alone."""
    from llamabot.models.reply import ModelRequest
    from llamabot.models.resolve import get_model
    from llamabot.models.seam import call_model

    model = get_model(model_name)
    requests = [ModelRequest(model=model_name, messages=[{"role": "system", "content": "Answer briefly."},
                                                          {"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}],
                             params={"max_tokens": tokens, "temperature": 0.0}) for i in range(n)]
    for request in requests:  # warm: both sides then find the same state (prefix caches are off, see main)
        call_model(model, request)

    def serial() -> tuple[float, list[str]]:
        started = time.perf_counter()
        replies = [call_model(model, request) for request in requests]
        return sum(r.usage.completion_tokens for r in replies) / (time.perf_counter() - started), [
            r.content or "" for r in replies]

    def together() -> tuple[float, list[str]]:
        replies: list = [None] * n

        def one(i: int) -> None:
            replies[i] = call_model(model, requests[i])

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(r.usage.completion_tokens for r in replies) / (time.perf_counter() - started), [
            r.content or "" for r in replies]

    ratios, same = [], []
    for rep in range(reps):
        if rep % 2 == 0:
            (one_rate, alone), (all_rate, batched) = serial(), together()
        else:
            (all_rate, batched), (one_rate, alone) = together(), serial()
        ratios.append(all_rate / one_rate)
        same.append(sum(a == b for a, b in zip(alone, batched, strict=True)) / n)
    return statistics.median(ratios), statistics.mean(same)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="0.5B model, fewer tokens, one pair")
    parser.add_argument("--model", default=None, help="local/<alias> (default: 1.5B, or 0.5B in quick mode)")
    args = parser.parse_args()
    quick = quick_mode(args.quick)
    # No prefix caches: a prompt processed by one side must not make the other side's cheaper.
    os.environ["LLAMABOT_PREFIX_MEMORY_BYTES"] = os.environ["LLAMABOT_PREFIX_CACHE_BYTES"] = "0"
    model_name = args.model or ("local/qwen2.5-coder-0.5b" if quick else "local/qwen2.5-coder-1.5b")
    steps, tokens, reps, counts = (8, 16, 1, (2,)) if quick else (64, 96, 4, (2, 4, 8))
    from llamabot.models.registry import LOCAL_MODELS, ensure_model_file

    path = str(ensure_model_file(LOCAL_MODELS[model_name.split("/", 1)[1]].alias))
    cores = usable_cores()
    print(f"model {model_name}, {cores} usable cores, quick={int(quick)}", flush=True)
    rows = {}
    for threads in sorted({1, cores}):
        rows[threads] = engine_row(path, threads, steps)
        r = rows[threads]
        print(f"threads {threads}: prompt {r['prompt']:.1f} tok/s, 1/step {r['step1']:.1f}, "
              f"4/step {r['step4']:.1f} ({r['step4'] / r['step1']:.2f}x), "
              f"8/step {r['step8']:.1f} ({r['step8'] / r['step1']:.2f}x)", flush=True)
    floor = floor_gains(path, cores, steps // 4 if quick else 16)
    print("batched decoding floor (k sequences, logits each): "
          + ", ".join(f"{k}: {g:.2f}x" for k, g in floor.items()), flush=True)
    lone = statistics.median(lone_pairs(model_name, tokens, reps))
    concurrent = {n: concurrent_ratio(model_name, n, tokens // 2, 1 if quick else 3) for n in counts}
    for n, (ratio, same) in concurrent.items():
        print(f"{n} concurrent requests: {ratio:.2f}x the tokens/s of the same requests one by one; "
              f"{same:.0%} of the batched answers equal the answer alone", flush=True)
    top = rows[cores]
    print(
        f"RESULT cores={cores} prompt_tok_s_1={rows[1]['prompt']:.1f} prompt_tok_s_all={top['prompt']:.1f} "
        f"gen_tok_s_1={rows[1]['step1']:.1f} gen_tok_s_all={top['step1']:.1f} "
        f"gen_thread_ratio={top['step1'] / rows[1]['step1']:.3f} step4_gain={top['step4'] / top['step1']:.3f} "
        f"step8_gain={top['step8'] / top['step1']:.3f} "
        + " ".join(f"floor_{k}_gain={g:.3f}" for k, g in floor.items())
        + f" lone_ratio={lone:.3f} "
        + " ".join(f"concurrent_{n}_ratio={r:.3f} same_{n}={s:.3f}" for n, (r, s) in concurrent.items())
        + f" quick={int(quick)}"
    )


if __name__ == "__main__":
    main()

"""The embedded model's batching engine (``models/local/scheduler.py``): stop strings (pure), then the real 0.5B
model under concurrent requests: isolation under random arrivals, cancellations and grammars, shared prefixes,
the bounded queue, failures that stay with their request, memory bounded by the context. Short generations."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time

import pytest

from llamabot.models.local.engine import LocalEngine, adrive, drive
from llamabot.models.local.runtime import loaded_model
from llamabot.models.local.scheduler import (
    CANCELLED,
    LocalBusyError,
    LocalGenerationError,
    Sampling,
    Scheduler,
    first_stop,
    held_back,
)

ALIAS = "qwen2.5-coder-0.5b"
WORDS = ["apple", "river", "candle", "tiger", "violin", "pepper", "rocket", "marble"]


def test_mdl_batch_010_text_that_could_still_become_a_stop_string_is_held_back():
    assert held_back("hello <|im", ["<|im_end|>"]) == 4
    assert held_back("hello", ["<|im_end|>"]) == 0
    assert held_back("a\n\n", ["\n\nQuestion:", "\n"]) == 2
    assert held_back("", ["x"]) == 0
    assert first_stop("one two STOP three", ["STOP", "two"], 0) == 4
    assert first_stop("one two", ["STOP"], 0) == -1
    assert first_stop("abcSTOP", ["STOP"], 5) == -1  # searched from where new text could complete one


@pytest.fixture(scope="module")
def llm():
    from llamabot.models.registry import local_runtime_installed

    if not local_runtime_installed():
        pytest.fail('llama-cpp-python is not installed: pip install -e ".[local,dev]"')
    return loaded_model(ALIAS).llm


@pytest.fixture
def make(llm):
    """A scheduler of its own over the loaded weights (closed after the test)."""
    made: list[Scheduler] = []

    def build(**options):
        settings = {"n_ctx": 4096, "n_batch": 512, "n_threads": 2, "sequences": 4, "queue_size": 64,
                    "prefill_chunk": 64, **options}
        made.append(Scheduler(llm, **settings))
        return made[-1]

    yield build
    for scheduler in made:
        scheduler.close()


def prompt(llm, word: str, system: str = "You repeat words exactly.") -> list[int]:
    text = (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\nWrite the word {word} four times, "
            "separated by single spaces, and nothing else.<|im_end|>\n<|im_start|>assistant\n")
    return llm.tokenize(text.encode(), add_bos=True, special=True)


def word_schema(word: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    schema = {"type": "object", "properties": {"word": {"type": "string", "enum": [word]},
                                               "times": {"type": "integer"}}, "required": ["word", "times"]}
    return json_schema_to_gbnf(json.dumps(schema))


@pytest.mark.local_model
def test_mdl_batch_020_random_arrivals_cancellations_and_grammars_never_mix_streams(llm, make):
    """Fuzz: 24 requests arrive at random times from 24 threads (4 sequences: most wait and join the running
    batch), a third under a grammar, some cancelled after their first piece. Every finished stream holds only its
    own word; every grammar output is valid JSON for its own schema; every cancelled one ends with CANCELLED."""
    scheduler = make()
    rng = random.Random(7)
    plans = [(WORDS[i % 8], rng.random() < 0.33, rng.random() < 0.2, rng.random() * 0.6) for i in range(24)]
    results: list[object] = [None] * len(plans)

    def one(index: int) -> None:
        word, grammar, cancel, delay = plans[index]
        time.sleep(delay)
        sampling = Sampling(grammar=word_schema(word) if grammar else None)
        request = scheduler.submit(prompt(llm, word), sampling, ["<|im_end|>"], 24, stream=True)
        pieces: list[str] = []
        run = request.results()
        try:
            while True:
                pieces.append(next(run))
                if cancel:
                    request.cancel()
        except StopIteration as done:
            results[index] = ("done", "".join(pieces), done.value)
        except LocalGenerationError as exc:
            results[index] = ("error", "".join(pieces), exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    finished = cancelled = constrained = 0
    for (word, grammar, cancel, _), result in zip(plans, results, strict=True):
        kind, streamed, value = result  # type: ignore[misc]
        if cancel and kind == "error":
            assert value is CANCELLED
            cancelled += 1
            continue
        assert kind == "done", value
        finished += 1
        assert streamed == value.text and value.completion_tokens <= 24
        if grammar:
            data = json.loads(value.text)
            assert data["word"] == word and isinstance(data["times"], int)
            constrained += 1
        else:
            others = [w for w in WORDS if w != word and w in value.text.lower()]
            assert not others and word in value.text.lower(), (word, value.text)
    assert finished >= 12 and cancelled >= 2 and constrained >= 4, (finished, cancelled, constrained)
    assert all(owner is None for owner in scheduler.owner)  # every sequence freed


@pytest.mark.local_model
def test_mdl_batch_030_a_cancelled_request_frees_its_sequence_before_the_next_step(llm, make):
    scheduler = make(sequences=1)
    request = scheduler.submit(prompt(llm, "tiger"), Sampling(temperature=0.8, seed=1), [], 400, stream=True)
    run = request.results()
    next(run)
    steps = scheduler.decodes
    run.close()  # the caller goes away: the request is cancelled
    waiting = scheduler.submit(prompt(llm, "apple"), Sampling(), ["<|im_end|>"], 8)
    done = drive(waiting.results())
    assert "apple" in done.text.lower()
    assert scheduler.decodes - steps <= 12  # the cancelled one stopped within a step; the next one ran


@pytest.mark.local_model
def test_mdl_batch_040_a_full_queue_is_a_clear_error_at_once(llm, make):
    scheduler = make(sequences=1, queue_size=1)
    running = scheduler.submit(prompt(llm, "river"), Sampling(temperature=0.8, seed=2), [], 300, stream=True)
    first = running.results()
    next(first)  # it holds the only sequence
    waiting = scheduler.submit(prompt(llm, "apple"), Sampling(), ["<|im_end|>"], 8)
    started = time.perf_counter()
    with pytest.raises(LocalBusyError, match=r"1 requests waiting.*LLAMABOT_LOCAL_QUEUE"):
        scheduler.submit(prompt(llm, "candle"), Sampling(), ["<|im_end|>"], 8)
    assert time.perf_counter() - started < 0.5
    first.close()
    assert "apple" in drive(waiting.results()).text.lower()


@pytest.mark.local_model
def test_mdl_batch_050_a_prompt_that_does_not_fit_names_the_setting(llm, make):
    scheduler = make(n_ctx=256)
    with pytest.raises(LocalGenerationError, match=r"300 tokens.*holds 256.*LLAMABOT_LOCAL_N_CTX"):
        scheduler.submit([1] * 300, Sampling())
    with pytest.raises(LocalGenerationError, match="empty prompt"):
        scheduler.submit([], Sampling())
    request = scheduler.submit(prompt(llm, "apple"), Sampling(), [], 0)  # 0: up to the end of the context
    assert request.max_tokens == 256 - len(request.tokens)
    request.cancel()


@pytest.mark.local_model
def test_mdl_batch_060_a_failing_request_leaves_the_others_running(llm, make):
    scheduler = make()
    good = scheduler.submit(prompt(llm, "marble"), Sampling(), ["<|im_end|>"], 16, stream=True)
    pieces = good.results()
    first = next(pieces)
    bad = scheduler.submit(prompt(llm, "apple"), Sampling(grammar="root ::= ("), ["<|im_end|>"], 8)
    with pytest.raises(LocalGenerationError, match="rejected the grammar"):
        drive(bad.results())
    rest = []
    done = drive(pieces, rest.append)
    assert first + "".join(rest) == done.text and "marble" in done.text.lower()


@pytest.mark.local_model
def test_mdl_batch_070_a_request_joining_the_batch_shares_the_prompt_prefix_of_a_running_one(llm, make):
    scheduler = make()
    system = "You repeat words exactly. Never add anything else to your answer. " * 6
    running = scheduler.submit(prompt(llm, "violin", system), Sampling(temperature=0.8, seed=3), [], 200,
                               stream=True)
    pieces = running.results()
    next(pieces)
    joining = drive(scheduler.submit(prompt(llm, "pepper", system), Sampling(), ["<|im_end|>"], 16).results())
    assert joining.prefix == "shared" and "pepper" in joining.text.lower()
    pieces.close()


@pytest.mark.local_model
def test_mdl_batch_080_requests_are_admitted_only_while_the_context_has_room(llm, make):
    """4 sequences but a 512-token context: requests of ~40 prompt + 200 new tokens run two at a time, and every
    one completes (llama_decode never runs out of cells)."""
    scheduler = make(n_ctx=512)
    live: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            live.append(sum(owner is not None for owner in scheduler.owner))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    requests = [scheduler.submit(prompt(llm, w), Sampling(), ["<|im_end|>"], 200) for w in WORDS[:4]]
    done = [drive(r.results()) for r in requests]
    stop.set()
    watcher.join()
    assert all(w in d.text.lower() for w, d in zip(WORDS[:4], done, strict=True))
    assert max(live) == 2


@pytest.mark.local_model
def test_mdl_batch_090_only_the_scheduler_thread_calls_llama_cpp(monkeypatch):
    """Requests from the caller's thread, other threads and an event loop all decode on the scheduler's thread."""
    import llama_cpp

    engine = LocalEngine(loaded_model(ALIAS))
    calls: list[str] = []
    decode = llama_cpp.llama_decode

    def recorded(ctx, batch):  # noqa: ANN001
        calls.append(threading.current_thread().name)
        return decode(ctx, batch)

    monkeypatch.setattr(llama_cpp, "llama_decode", recorded)
    messages = [{"role": "user", "content": "Say hi."}]
    drive(engine.run(messages, {"max_tokens": 3}))
    other = threading.Thread(target=lambda: drive(engine.run(messages, {"max_tokens": 3})))
    other.start()
    other.join()

    async def on_loop() -> None:
        await asyncio.gather(*(adrive(lambda: engine.run(messages, {"max_tokens": 3})) for _ in range(3)))

    asyncio.run(on_loop())
    assert calls and set(calls) == {"llamabot-llama"}


@pytest.mark.local_model
def test_mdl_batch_100_cancelling_an_async_caller_cancels_its_request():
    engine = LocalEngine(loaded_model(ALIAS))
    scheduler = engine.model.scheduler
    messages = [{"role": "user", "content": "Write a long story about a tiger."}]

    async def scenario() -> None:
        pieces: list[str] = []
        task = asyncio.create_task(adrive(lambda: engine.run(messages, {"max_tokens": 500}, True), pieces.append))
        while not pieces:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(500):
            if all(owner is None for owner in scheduler.owner):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the cancelled request still holds its sequence")

    asyncio.run(scenario())


@pytest.mark.local_model
def test_mdl_batch_120_greedy_under_a_grammar_checks_the_best_token_first_and_answers_as_the_whole_vocabulary(
        llm, make, monkeypatch):
    """MDL-BATCH-120: a greedy sequence under a grammar asks the grammar about its best token only, and samples the
    whole vocabulary through the grammar when that token is refused: the text is the one the whole-vocabulary
    sampler gives (the prompt asks for prose, the grammar forces JSON, so refusals happen)."""
    from llamabot.models.local import sampling

    words = WORDS[:4]

    def answers(scheduler) -> list[str]:
        return [drive(scheduler.submit(prompt(llm, word), Sampling(grammar=word_schema(word)), [], 40).results()).text
                for word in words]

    checked = make()
    first = answers(checked)
    assert checked.grammar_refusals > 0  # the best token was refused at least once: the fallback ran
    assert [json.loads(text)["word"] for text in first] == words

    whole_init = sampling.SequenceSampler.__init__

    def whole_vocabulary(self, vocab, settings):  # the same sampler without the one-token check
        whole_init(self, vocab, settings)
        if self.greedy is not None:
            self._llama.llama_sampler_free(self.greedy)
            self.greedy = None

    monkeypatch.setattr(sampling.SequenceSampler, "__init__", whole_vocabulary)
    reference = make()
    assert answers(reference) == first and reference.grammar_refusals == 0

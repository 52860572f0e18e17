"""Phase 3: layered execution through the model seam (ANOT-P3-*), with the scripted model."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from llamabot import ScriptedModel
from llamabot.errors import ScriptedModelExhausted
from llamabot.models.reply import ModelReply
from llamabot.models.scripted import text
from llamabot.reasoning.anot import ANoTBot, AsyncANoTBot, LWTCycleError, LWTReferenceError
from llamabot.reasoning.anot.executor import arun_layer, fill_layer, run_layer
from llamabot.reasoning.anot.lwt import LWTStep
from llamabot.reasoning.anot.substitution import SubstitutionContext

from .helpers import ITEMS

PARALLEL = "\n".join(f"(c{i})=LLM('condition {i}: {{(items)}}[*][name]')" for i in range(1, 11)) + "\n" + (
    "(final)=LLM('" + " ".join(f"{{(c{i})}}" for i in range(1, 11)) + " Output top-5')"
)


def step_responder(request):
    prompt = request.last_user_text
    return text("[3, 2, 1]" if prompt.startswith("[") else "[2]")


async def test_anot_p3_010_independent_steps_run_concurrently():
    model = ScriptedModel(responder=step_responder, latency_s=0.05)
    bot = AsyncANoTBot(model=model, debug=0, concurrency=10, rank_by="final")  # the final step always runs
    started = time.perf_counter()
    result = await bot.aexecute(PARALLEL, ITEMS)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.05 * 2 * 1.6  # two layers of 50 ms, not eleven calls in a row
    assert len(model.requests) == 11 and result.final_ranking.parsed == (3, 2, 1)
    assert result.stats["P3"].calls == 11


async def test_anot_p3_020_the_concurrency_limit_is_honoured():
    in_flight, peak = 0, 0

    class Counting:
        name = "counting"

        def complete(self, request, on_token=None):
            raise AssertionError("the async flow must not call the sync model")

        async def acomplete(self, request, on_token=None):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.005)
            in_flight -= 1
            return ModelReply(content="[1]")

    await AsyncANoTBot(model=Counting(), debug=0, concurrency=3).aexecute(PARALLEL, ITEMS)
    assert peak == 3
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        AsyncANoTBot(model=Counting(), concurrency=0)


def test_anot_p3_030_sync_and_async_runs_give_the_same_outputs():
    script = "(a)=LLM('{(items)}[1][name]')\n(b)=LLM('{(a)} and {(items)}[2][name]')\n(final)=LLM('{(b)} {(query)}')"

    def echo(request):
        return text(f"<{request.last_user_text}>")

    sync = ANoTBot(model=ScriptedModel(responder=echo), debug=0).execute(script, ITEMS, "q?")
    asynchronous = asyncio.run(AsyncANoTBot(model=ScriptedModel(responder=echo), debug=0).aexecute(script, ITEMS, "q?"))
    assert sync.outputs == asynchronous.outputs == {"a": "<A>", "b": "<<A> and B>", "final": "<<<A> and B> q?>"}


def test_anot_p3_040_a_step_that_cannot_be_filled_does_not_call_the_model():
    script = "(a)=LLM('{(items)}[1][reviews][oops]')\n(final)=LLM('a said {(a)}')"
    model = ScriptedModel(responder=lambda r: text("[2, 1]"))
    result = ANoTBot(model=model, debug=0).execute(script, ITEMS)
    assert result.outputs["a"].startswith("ERROR: step 'a': cannot fill {(items)}[1][reviews][oops]")
    assert len(model.requests) == 1 and "a said ERROR:" in model.requests[0].last_user_text
    assert result.errors and result.final_ranking.parsed == (2, 1)


def test_anot_p3_050_invalid_scripts_are_refused_before_any_model_call():
    model = ScriptedModel()
    bot = ANoTBot(model=model, debug=0)
    with pytest.raises(LWTCycleError):
        bot.execute("(a)=LLM('{(b)}')\n(b)=LLM('{(a)}')", ITEMS)
    with pytest.raises(LWTReferenceError):
        bot.execute("(final)=LLM('{(c1)}')", ITEMS)
    assert model.requests == []


async def test_anot_p3_060_a_model_failure_propagates_after_the_layer_finished():
    model = ScriptedModel([text("[1]"), ScriptedModelExhausted("down"), text("[2]")])
    calls = fill_layer([LWTStep("a", "x"), LWTStep("b", "y"), LWTStep("c", "z")], SubstitutionContext("", ITEMS))
    with pytest.raises(ScriptedModelExhausted, match="down"):
        await arun_layer(calls, model, {})
    assert len(model.requests) == 3


def test_anot_p3_070_the_final_output_becomes_the_ranking_with_score_fallback():
    script = "(c1)=LLM('x')\n(c2)=LLM('y')\n(final)=LLM('{(c1)} {(c2)}')"
    model = ScriptedModel([text("[2, 3]"), text("[3]"), text("I am not sure.")])
    result = ANoTBot(model=model, debug=0).execute(script, ITEMS)
    assert result.ranking.source == "scores" and result.ranking.indices == (3, 2, 1)  # votes: 3 twice, 2 once
    assert result.score_ranking.indices == (3, 2, 1)


async def test_anot_p3_080_every_step_call_carries_the_step_limits_and_completion_kwargs():
    """Regression: the step parameters once lived in ``LayerNode.params``, which pocketflow's Flow resets on every
    run, so steps ran without ``step_max_tokens`` (1024 tokens of rambling instead of 128)."""
    script = "(c1)=LLM('kids: {(items)}[*][attributes][GoodForKids]. Which are True?')\n(final)=LLM('{(c1)} top-5')"
    model = ScriptedModel(responder=lambda request: text("[1, 3]"))
    ANoTBot(model=model, debug=0, step_max_tokens=40, temperature=0.2, rank_by="final").execute(script, ITEMS)
    await AsyncANoTBot(model=model, debug=0, step_max_tokens=40, temperature=0.2, rank_by="final").aexecute(script, ITEMS)
    assert len(model.requests) == 4
    assert all(r.params == {"temperature": 0.2, "max_tokens": 40} for r in model.requests)


def test_anot_p3_090_rank_by_scores_uses_the_logic_over_the_condition_steps():
    def run(rank_by, outputs):
        model = ScriptedModel([text(o) for o in outputs])
        script = "(c1)=LLM('x')\n(c2)=LLM('y')\n(final)=LLM('{(c1)} {(c2)}')"
        return ANoTBot(model=model, debug=0, rank_by=rank_by).execute(script, ITEMS)

    echoed = ["[2, 3]", "[3]", "[1, 2, 3]"]  # the final step answers with the item order
    assert run("final", echoed).ranking.indices == (1, 2, 3)
    by_scores = run("scores", echoed)
    assert by_scores.ranking.indices == (3, 2, 1) and by_scores.ranking.source == "scores"
    nothing = run("scores", ["[]", "[]", "[2, 1]"])  # no condition step listed any item: the final step decides
    assert nothing.ranking.indices == (2, 1, 3) and nothing.ranking.source == "list"
    with pytest.raises(ValueError, match="rank_by"):
        ANoTBot(model=ScriptedModel([]), debug=0, rank_by="vibes")


# -- the sync path overlaps a layer's steps too (issue #14) -----------------------------------------------------


class BarrierModel:
    """A sync-only model whose condition steps block until ``parties`` of them are in flight at once: only
    concurrent execution releases the barrier; sequential calls break it after ``timeout`` (the run then fails
    instead of hanging). Counts the peak of calls in flight."""

    name = "barrier"

    def __init__(self, parties: int, timeout: float = 5.0):
        self.barrier = threading.Barrier(parties, timeout=timeout)
        self.lock = threading.Lock()
        self.in_flight = self.peak = 0

    def complete(self, request, on_token=None):
        prompt = request.last_user_text
        if "top-5" in prompt:
            return ModelReply(content="[3, 2, 1]")
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            self.barrier.wait()  # BrokenBarrierError after the timeout when the steps run one at a time
            return ModelReply(content="[2]")
        finally:
            with self.lock:
                self.in_flight -= 1

    async def acomplete(self, request, on_token=None):
        raise AssertionError("the sync flow must not call the async model")


@pytest.mark.parametrize("concurrency", [2, 5, 10])
def test_anot_p3_100_the_sync_bot_runs_a_layers_steps_concurrently_up_to_the_limit(concurrency):
    model = BarrierModel(parties=concurrency)
    result = ANoTBot(model=model, debug=0, concurrency=concurrency, rank_by="final").execute(PARALLEL, ITEMS)
    assert model.peak == concurrency  # the ten steps of layer 1 overlapped, never more than the limit
    assert result.outputs["c1"] == "[2]" and result.final_ranking.parsed == (3, 2, 1)
    steps = result.trace.of_kind("lwt_step")
    layer_one = [s for s in result.trace.spans if s.name == "P3" and s.attributes.get("layer") == 0]
    assert len(steps) == 11 and all(s.parent_id == layer_one[0].span_id for s in steps if s.name != "final")
    assert [s.span_id for s in result.trace.spans] == list(range(len(result.trace.spans)))  # ids unique across threads


def test_anot_p3_100_with_concurrency_1_the_sync_steps_run_one_at_a_time():
    model = BarrierModel(parties=2, timeout=0.3)
    with pytest.raises(threading.BrokenBarrierError):  # the barrier cannot be released by one call at a time
        ANoTBot(model=model, debug=0, concurrency=1).execute(PARALLEL, ITEMS)
    assert model.peak == 1


def test_anot_p3_110_a_sync_step_failure_propagates_after_the_layer_finished():
    model = ScriptedModel([text("[1]"), ScriptedModelExhausted("down"), text("[2]")])
    calls = fill_layer([LWTStep("a", "x"), LWTStep("b", "y"), LWTStep("c", "z")], SubstitutionContext("", ITEMS))
    with pytest.raises(ScriptedModelExhausted, match="down"):
        run_layer(calls, model, {}, concurrency=3)
    assert len(model.requests) == 3
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        run_layer(calls, model, {}, concurrency=0)


def test_anot_p3_100_inside_a_durable_run_the_sync_steps_run_one_at_a_time_in_order():
    """A durable run records its steps in order, so the sync layer does not start them from several threads."""
    from llamabot.models.exchange import carry_out, using_steps

    class Recording:
        def __init__(self):
            self.prompts: list[str] = []

        def step(self, request, model, on_token):
            self.prompts.append(request.messages[-1]["content"])
            return carry_out(request, model, on_token)

        async def astep(self, request, model, on_token):
            raise AssertionError("the sync layer must use the sync step")

    model, runner = BarrierModel(parties=2, timeout=0.3), Recording()
    calls = fill_layer([LWTStep(f"c{i}", f"condition {i}") for i in range(1, 4)], SubstitutionContext("", ITEMS))
    with using_steps(runner), pytest.raises(threading.BrokenBarrierError):
        run_layer(calls, model, {}, concurrency=3)  # one at a time: the two-party barrier cannot be released
    assert model.peak == 1 and runner.prompts == ["condition 1", "condition 2", "condition 3"]  # in step order


@pytest.mark.parametrize("asynchronous", [False, True])
def test_anot_p3_130_the_final_step_runs_only_when_its_output_decides_the_ranking(asynchronous):
    script = "(c1)=LLM('x')\n(c2)=LLM('y')\n(final)=LLM('{(c1)} {(c2)}. Output top-5')"

    def run(rank_by, outputs):
        model = ScriptedModel(responder=lambda r: text(outputs["final" if "top-5" in r.last_user_text else "cond"]))
        if asynchronous:
            result = asyncio.run(AsyncANoTBot(model=model, debug=0, rank_by=rank_by).aexecute(script, ITEMS))
        else:
            result = ANoTBot(model=model, debug=0, rank_by=rank_by).execute(script, ITEMS)
        return result, ["top-5" in r.last_user_text for r in model.requests]

    decided, sent = run("scores", {"cond": "[2]", "final": "[1, 2, 3]"})  # the conditions list item 2: decided
    assert sent == [False, False] and "final" not in decided.outputs
    assert decided.ranking.source == "scores" and decided.ranking.best == 2 and decided.final_ranking.source == "scores"
    undecided, sent = run("scores", {"cond": "[]", "final": "[3, 1]"})  # no condition step listed an item
    assert sent == [False, False, True] and undecided.ranking.indices == (3, 1, 2)
    assert undecided.ranking.source == "list" and undecided.stats["P3"].calls == 3
    seed_way, sent = run("final", {"cond": "[2]", "final": "[3, 1]"})  # the final step always decides
    assert sent == [False, False, True] and seed_way.ranking.indices == (3, 1, 2)
    assert seed_way.score_ranking.best == 2


def test_anot_p3_140_a_failed_step_lists_no_item():
    """A step that could not be filled outputs ``ERROR: ...``; the ``[1]`` its path quotes is not a vote."""
    script = "(a)=LLM('{(items)}[1][reviews][oops]')\n(b)=LLM('x')\n(final)=LLM('a said {(a)}')"
    result = ANoTBot(model=ScriptedModel(responder=lambda r: text("[2]")), debug=0).execute(script, ITEMS)
    assert result.outputs["a"].startswith("ERROR: ") and "[1]" in result.outputs["a"]
    assert result.score_ranking.indices == (2, 1, 3) and "final" not in result.outputs  # only b's vote counts

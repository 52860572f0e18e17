"""One end-to-end ANoT run on the embedded model: one dev request, 5 candidates (ANOT-E2E-010).

It asserts what must hold for any model: the three phases ran, an executable LWT was run, and the ranking is a
permutation of the candidates. Whether the ranking is right is measured by the evaluation, not asserted here.
"""

from __future__ import annotations

import pytest

from llamabot.evals.anot import load_dataset
from llamabot.evals.anot.data import select_candidates
from llamabot.reasoning.anot import ANoTBot
from llamabot.reasoning.anot.lwt import execution_layers, final_step

from .helpers import FIXTURE_DATA


@pytest.mark.local_model
def test_anot_e2e_010_one_request_five_candidates_on_the_embedded_model(local_model_name):
    dataset = load_dataset(FIXTURE_DATA)
    request = dataset.requests[0]  # R01: drive-thru, kid-friendly, no TV
    chosen = select_candidates(len(dataset.items), request.gold_idx, 5, 0, request.id)
    items = [dataset.items[i] for i in chosen]
    bot = ANoTBot(model=local_model_name, debug=0, max_iterations=2)  # keep CI short: at most 3 agent decisions
    result = bot(request.text, items)
    assert sorted(result.ranking.indices) == [1, 2, 3, 4, 5]
    assert result.ranking.source in ("list", "integers", "scores", "order")
    assert set(result.stats) == {"P1", "P2", "P3"}
    assert result.stats["P1"].calls >= 1 and result.stats["P2"].calls >= 1
    assert result.stats["P1"].prompt_tokens > 0 and result.stats["P2"].prompt_tokens > 0
    # phase 3 calls the model once per LLM step that ran; CHECK steps are evaluated without it
    assert result.stats["P3"].calls == sum(
        1 for s in result.steps if s.kind == "LLM" and not result.outputs.get(s.id, "ERROR:").startswith("ERROR:")
    )
    assert result.steps and execution_layers(result.steps)
    final = final_step(result.steps).id  # every step ran but the final one, which runs when its output decides
    assert {step.id for step in result.steps} - set(result.outputs) <= {final}
    assert final in result.outputs or result.ranking == result.score_ranking


@pytest.mark.local_model
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_anot_p3_120_a_layers_steps_are_decoded_in_one_batch_on_the_embedded_model(local_model_name, mode):
    """Phase 3's concurrent steps reach the embedded model's scheduler together: its llama_decode calls carry
    several of them at once; with ``concurrency=1`` (the control) never more than one."""
    import asyncio

    from llamabot.models.local.runtime import loaded_model
    from llamabot.models.resolve import get_model
    from llamabot.reasoning.anot.executor import StepCall, arun_layer, run_layer
    from llamabot.reasoning.anot.lwt import LWTStep

    model = get_model(local_model_name)
    scheduler = loaded_model(local_model_name.split("/", 1)[1]).scheduler
    calls = [StepCall(LWTStep(f"s{i}", question), question)
             for i, question in enumerate(["Is a cafe with a drive-thru kid-friendly?", "Name a colour.",
                                           "What is 3 plus 4?"])]
    params = {"max_tokens": 8, "temperature": 0.0}
    peaks = {}
    for concurrency in (8, 1):
        scheduler.peak = 0
        if mode == "sync":
            outputs = run_layer(calls, model, params, concurrency)
        else:
            outputs = asyncio.run(arun_layer(calls, model, params, concurrency))
        assert set(outputs) == {"s0", "s1", "s2"} and all(outputs.values())
        peaks[concurrency] = scheduler.peak
    assert peaks[8] >= 2, peaks
    assert peaks[1] == 1, peaks

"""Property: for any generated DAG, layers respect dependencies and execution runs a step only after every
step it references has finished (ANOT-DAG-010), in the async (concurrent) and the sync flow."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from llamabot.models.reply import ModelReply, ModelRequest
from llamabot.reasoning.anot import AsyncANoTBot, LWTStep, execution_layers, parse_lwt
from llamabot.reasoning.anot.lwt import render_lwt


class RecordingModel:
    """Answers every step with ``OUT:<id>`` after a per-step delay, recording when each call starts and ends."""

    name = "recording"

    def __init__(self, delays: dict[str, float]):
        self.delays = delays
        self.events: list[tuple[str, str]] = []

    @staticmethod
    def _step_id(request: ModelRequest) -> str:
        return request.last_user_text.split(":", 1)[0].removeprefix("step ")

    def complete(self, request, on_token=None):
        step_id = self._step_id(request)
        self.events += [("start", step_id), ("end", step_id)]
        return ModelReply(content=f"OUT:{step_id}")

    async def acomplete(self, request, on_token=None):
        step_id = self._step_id(request)
        self.events.append(("start", step_id))
        await asyncio.sleep(self.delays.get(step_id, 0.0))
        self.events.append(("end", step_id))
        return ModelReply(content=f"OUT:{step_id}")


@st.composite
def dags(draw):
    """Steps s0..s(n-1), each referencing any earlier ones, written in a random script order."""
    n = draw(st.integers(min_value=1, max_value=9))
    steps = []
    for i in range(n):
        deps = draw(st.lists(st.integers(min_value=0, max_value=max(0, i - 1)), max_size=3, unique=True)) if i else []
        refs = " ".join(f"{{(s{d})}}" for d in deps)
        steps.append(LWTStep(f"s{i}", f"step s{i}: {refs}"))
    order = draw(st.permutations(steps))
    delays = {f"s{i}": draw(st.sampled_from([0.0, 0.001, 0.003])) for i in range(n)}
    return list(order), delays


def check_execution(steps: list[LWTStep], model: RecordingModel, outputs: dict[str, str], prompts: dict[str, str]):
    position = {event: index for index, event in enumerate(model.events)}
    for step in steps:
        assert outputs[step.id] == f"OUT:{step.id}"
        for dep in step.references:
            assert position[("end", dep)] < position[("start", step.id)], (dep, step.id, model.events)
            assert f"OUT:{dep}" in prompts[step.id]  # the filled prompt carries the dependency's output


@settings(max_examples=60, deadline=None)
@given(dags())
def test_anot_dag_010_any_dag_runs_each_step_only_after_its_dependencies(generated):
    steps, delays = generated
    script = render_lwt(steps)
    layers = execution_layers(parse_lwt(script))
    assert sorted(s.id for layer in layers for s in layer) == sorted(s.id for s in steps)
    layer_of = {s.id: index for index, layer in enumerate(layers) for s in layer}
    for step in steps:
        assert all(layer_of[dep] < layer_of[step.id] for dep in step.references)
        if layer_of[step.id] > 0:  # layers are as early as possible
            assert any(layer_of[dep] == layer_of[step.id] - 1 for dep in step.references)

    items = [{"x": 1}]
    model = RecordingModel(delays)
    result = asyncio.run(AsyncANoTBot(model=model, debug=0, concurrency=4).aexecute(script, items))
    prompts = {
        span.attributes["request"].last_user_text.split(":", 1)[0].removeprefix("step "): span.attributes["request"].last_user_text
        for span in result.trace.of_kind("model_call")
    }
    check_execution(steps, model, result.outputs, prompts)

    sync_model = RecordingModel({})
    sync_result = AsyncANoTBot(model=sync_model, debug=0).execute(script, items)
    assert sync_result.outputs == result.outputs
    check_execution(steps, sync_model, sync_result.outputs, prompts)

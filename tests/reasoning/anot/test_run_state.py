"""The ANoT run state is data: it round-trips through the state codec at every node boundary (ANOT-STATE-*)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from llamabot import ScriptedModel
from llamabot.graph.codec import StateCodecError, dumps_state, encode_state, loads_state
from llamabot.models.scripted import tool_call
from llamabot.observe.hooks import RunHooks
from llamabot.reasoning.anot import ANoTBot
from llamabot.reasoning.anot.state import new_anot_state

from .helpers import ITEMS, scripted_phase2, three_phase_responder


class RoundTrip(RunHooks):
    """At every node boundary (``state`` given), save the state as JSON and load it back: it must be equal."""

    def __init__(self, allowed: tuple[type, ...]):
        self.allowed = allowed
        self.boundaries: list[str] = []

    def on_end(self, span: Any, state: Any) -> None:
        if state is None:
            return
        restored = loads_state(dumps_state(state, allowed=self.allowed), allowed=self.allowed)
        assert restored == state, span.name
        assert dumps_state(restored, allowed=self.allowed) == dumps_state(state, allowed=self.allowed)
        self.boundaries.append(span.name)


@pytest.mark.parametrize("rank_by", ["scores", "final"])
@pytest.mark.parametrize("asynchronous", [False, True])
def test_anot_state_010_the_state_round_trips_at_every_node_boundary_of_a_three_phase_run(asynchronous, rank_by):
    bot = ANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=0, rank_by=rank_by)
    hook = RoundTrip(bot.state_classes)
    if asynchronous:
        result, _ = asyncio.run(bot.arun_with_trace("kids and cozy", items=ITEMS, hooks=[hook]))
    else:
        result, _ = bot.run_sync("kids and cozy", items=ITEMS, hooks=[hook])
    assert result.best == (1 if rank_by == "scores" else 3)
    # phase 2's agent steps are node boundaries of the ANoT run itself, on the one ANoT state; the final step
    # runs on demand: after a first visit to rank when its output decides the ranking
    final = ["rank", "layer"] if rank_by == "final" else []
    assert hook.boundaries == ["strategy", "lwt", "decision", "done", "lwt_end", "layer", *final, "rank"]


def test_anot_state_010_the_strategy_classes_are_the_bots_state_classes():
    bot = ANoTBot(model=ScriptedModel(), debug=0)
    model, condition = bot.state_classes
    assert model is bot.strategy_model and condition.__name__ == "Condition"
    state = new_anot_state("q", ITEMS, tag="R01", trace_id="t")
    state["strategy"] = model.model_validate(
        {"conditions": [{"request_words": "w", "id": 1, "type": "ATTR", "path": "a", "expected": "1"}],
         "logic": "AND(1)", "total_items": 3, "message": ""})
    assert loads_state(dumps_state(state, allowed=bot.state_classes), allowed=bot.state_classes) == state
    with pytest.raises(StateCodecError, match="allowed="):
        encode_state(state)


def test_anot_state_020_no_live_handle_is_in_a_fresh_state():
    state = new_anot_state("q", ITEMS)
    assert "log" not in state and "trace" not in state
    assert loads_state(dumps_state(state)) == state


def test_anot_state_030_a_run_continues_from_a_checkpoint_inside_phase_2_with_its_saved_script():
    c3 = "(c3)=LLM('WiFi: {(items)}[*][attributes][WiFi]. Which are free? Output: [indices]')"
    responder = scripted_phase2(tool_call("lwt_insert", idx=3, step=c3), tool_call("lwt_list"), tool_call("done"))
    bot = ANoTBot(model=ScriptedModel(responder=responder), debug=0)
    saved: list[Any] = []
    whole = bot.run_sync("q", items=ITEMS, hooks=[bot.checkpoints(saved.append)])[0]
    assert [s.id for s in whole.steps] == ["c1", "c2", "c3", "final"]
    inserted = next(c for c in saved if c.node == "lwt_insert")
    state = loads_state(inserted.state, allowed=bot.state_classes)
    assert [s.id for s in state["script"]] == ["c1", "c2", "c3", "final"] and state["iteration_count"] == 1
    resumed = bot.resume(inserted.to_json())  # a fresh run context: the rest of phase 2, then phase 3
    assert resumed.steps == whole.steps and resumed.ranking == whole.ranking and resumed.outputs == whole.outputs
    assert resumed.phase2["tool_calls"] == whole.phase2["tool_calls"] and resumed.phase2["fallback"] is None

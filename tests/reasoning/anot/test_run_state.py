"""The ANoT run state is data: it round-trips through the state codec at every node boundary (ANOT-STATE-*)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from llamabot import ScriptedModel
from llamabot.graph.codec import StateCodecError, dumps_state, encode_state, loads_state
from llamabot.observe.hooks import RunHooks
from llamabot.reasoning.anot import ANoTBot
from llamabot.reasoning.anot.state import new_anot_state

from .helpers import ITEMS, three_phase_responder


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


@pytest.mark.parametrize("asynchronous", [False, True])
def test_anot_state_010_the_state_round_trips_at_every_node_boundary_of_a_three_phase_run(asynchronous):
    bot = ANoTBot(ScriptedModel(responder=three_phase_responder()), debug=0)
    hook = RoundTrip(bot.state_classes)
    if asynchronous:
        result, _ = asyncio.run(bot.arun_with_trace("kids and cozy", items=ITEMS, hooks=[hook]))
    else:
        result, _ = bot.run_sync("kids and cozy", items=ITEMS, hooks=[hook])
    assert result.best == 1
    for name in ("strategy", "done", "layer", "rank"):
        assert name in hook.boundaries, hook.boundaries
    assert hook.boundaries.count("layer") == 2


def test_anot_state_010_the_strategy_classes_are_the_bots_state_classes():
    bot = ANoTBot(ScriptedModel(), debug=0)
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

"""Checkpoints and resume (AGT-STATE-030..050): at every node boundary of a run, for all four patterns, the state
round-trips through JSON, and a run continued from the restored state ends exactly as the uninterrupted one.

The models are stateless responders (their reply is a function of the request), so a resumed run in a fresh
bot gets the same replies the uninterrupted run got from that point on.
"""

from __future__ import annotations

import asyncio

import pytest

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel
from llamabot.evals.game24 import Game24Prompts
from llamabot.graph.checkpoint import Checkpoint
from llamabot.models.reply import ModelRequest
from llamabot.models.scripted import json_reply, tool_call
from llamabot.reasoning.anot import ANoTBot
from llamabot.reasoning.aot import AoTBot
from llamabot.reasoning.aot.prompts import EXAMPLE_PLAN
from llamabot.reasoning.tot import ToTBot
from llamabot.toolkits.calculator import add, multiply
from tests.reasoning.anot.helpers import ITEMS, three_phase_responder
from tests.reasoning.tot.helpers import game24_oracle


def agent_script(request: ModelRequest):
    done = [m for m in request.messages if m["role"] == "tool"]
    if len(done) == 0:
        return tool_call("add", a=2, b=3)
    if len(done) == 1:
        return tool_call("multiply", a=5, b=7)
    return tool_call("respond_to_user", response=f"the answer is {done[-1]['content']}")


def agent_bot():
    return AgentBot(tools=[add, multiply], model=ScriptedModel(responder=agent_script))


def aot_bot():
    return AoTBot(expressions=False, model=ScriptedModel(responder=lambda request: json_reply(EXAMPLE_PLAN)))


def tot_bot():
    # no wall-clock budget: a resumed search must not see less time than the uninterrupted one
    return ToTBot(model=ScriptedModel(responder=game24_oracle), prompts=Game24Prompts(), branching_factor=3, max_depth=3,
                  max_duration_ms=None)  # no wall-clock budget: a resumed search has as much time


def anot_bot():
    return ANoTBot(model=ScriptedModel(responder=three_phase_responder()), debug=0)


PATTERNS = {
    "agent": (agent_bot, "What is (2 + 3) * 7?", lambda r: r),
    "aot": (aot_bot, "What is (15 + 7) * 3 - 10?", lambda r: (r.answer, r.record.to_dict()["answer"], r.replans)),
    "tot": (tot_bot, "4 9 10 13", lambda r: (r.answer, r.solution_path, r.termination.node_count)),
    "anot": (anot_bot, "a cozy cafe for kids",
             lambda r: (r.ranking, r.score_ranking, r.final_ranking, r.outputs, [s.id for s in r.steps], r.errors)),
}
OPTIONS = {"anot": {"items": ITEMS}}


def checkpoints_of(make, query, **options):
    bot = make()
    saved: list[Checkpoint] = []
    result = bot.run_sync(query, hooks=[bot.checkpoints(saved.append)], **options)[0]
    return result, saved


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_agt_state_030_a_run_resumed_from_any_node_boundary_ends_as_the_uninterrupted_run(pattern):
    make, query, observe = PATTERNS[pattern]
    result, saved = checkpoints_of(make, query, **OPTIONS.get(pattern, {}))
    assert len(saved) >= 2, f"{pattern}: too few boundaries to test: {saved}"
    for checkpoint in saved:
        restored = Checkpoint.from_json(checkpoint.to_json())  # as it would come back from storage
        resumed = make().resume(restored)
        assert observe(resumed) == observe(result), f"{pattern}: resumed after {checkpoint.node}/{checkpoint.step}"


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_agt_state_035_the_async_resume_ends_as_the_sync_one(pattern):
    make, query, observe = PATTERNS[pattern]
    result, saved = checkpoints_of(make, query, **OPTIONS.get(pattern, {}))
    resumed = asyncio.run(make().aresume(saved[len(saved) // 2].to_json()))
    assert observe(resumed) == observe(result)


def test_agt_state_040_a_resumed_agent_run_does_not_repeat_completed_tool_calls():
    calls: list[tuple[int, int]] = []

    from llamabot import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: first.
            b: second.
        """
        calls.append((a, b))
        return a + b

    def make():
        return AgentBot(tools=[add, multiply], model=ScriptedModel(responder=agent_script))

    bot = make()
    saved: list[Checkpoint] = []
    answer = bot.run_sync("q", hooks=[bot.checkpoints(saved.append)])[0]
    after_add = next(c for c in saved if c.node == "add")
    calls.clear()
    assert make().resume(after_add) == answer
    assert calls == []  # add ran before the checkpoint: the resumed run does not run it again


def test_agt_state_045_resuming_from_the_final_boundary_returns_the_result_without_any_step():
    bot = agent_bot()
    saved: list[Checkpoint] = []
    answer = bot.run_sync("q", hooks=[bot.checkpoints(saved.append)])[0]
    model = ScriptedModel()  # empty: any model call would fail
    fresh = AgentBot(tools=[add, multiply], model=model)
    assert fresh.resume(saved[-1]) == answer and model.requests == []


def test_agt_state_050_an_async_agent_run_takes_the_same_checkpoints():
    bot = AsyncAgentBot(tools=[add, multiply], model=ScriptedModel(responder=agent_script))
    saved: list[Checkpoint] = []
    asyncio.run(bot.arun("q", hooks=[bot.checkpoints(saved.append)]))
    _, sync_saved = checkpoints_of(agent_bot, "q")
    assert [(c.node, c.action) for c in saved] == [(c.node, c.action) for c in sync_saved]

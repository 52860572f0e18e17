"""Self-consistency over plans (AOT-SC-*): ``samples=k`` samples k plans, executes every one, and the majority
answer wins (ties: the earliest sample). The vote itself is pure and tested without a model."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from llamabot.graph.codec import dumps_state, loads_state
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.observe.hooks import RunHooks
from llamabot.reasoning.aot import AoTBot, AtomExecutionError, PlanValidationError
from llamabot.reasoning.aot.vote import answer_key, majority


def plan(op: str, a: float, b: float) -> dict:
    return {
        "atoms": [
            {"id": 1, "kind": "tool", "name": op, "input": {"a": a, "b": b}, "dependsOn": []},
            {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]},
        ]
    }


BAD = {"atoms": [{"id": 1, "kind": "tool", "name": "sqrt", "input": {"x": 4}, "dependsOn": []}]}
DIVIDE_BY_ZERO = plan("divide", 1, 0)


# -- the vote (pure) ------------------------------------------------------------------------------------------------


def test_aot_sc_020_equal_answers_meet_whatever_their_form():
    assert answer_key(14) == answer_key(14.0) == answer_key("14") == answer_key(" 14.0 ")
    assert answer_key(0.1 + 0.2) == answer_key(0.3) and answer_key(-0.0) == answer_key(0)
    assert answer_key({3: 6.0, 4: 14.0}) == answer_key({4: 14, 3: 6})
    assert answer_key("Yes") == answer_key("yes") != answer_key("no")
    assert answer_key(True) != answer_key(1) and answer_key(14) != answer_key(14.5)


def test_aot_sc_020_the_majority_wins_and_a_tie_goes_to_the_earliest_sample():
    vote = majority([6, 8, 8.0, "6", 8])
    assert vote.winner == 1 and vote.votes == 3 and vote.counts == ((0, 2), (1, 3))
    assert majority([5, 7]).winner == 0  # one vote each: sample 1's answer
    assert majority([7, 5, 5, 7]).winner == 0  # two each: the answer sample 1 gave
    assert majority([9, 5, 7, 7, 5]).winner == 1  # 5 and 7 tie; 5 appeared first
    with pytest.raises(ValueError, match="every sampled plan failed"):
        majority([])


# -- the bot ---------------------------------------------------------------------------------------------------------


class Boundaries(RunHooks):
    """(node, action) at every node end; the state round-trips through the codec there."""

    def __init__(self):
        self.steps: list[tuple[str, str | None]] = []

    def on_end(self, span, state):
        if state is not None:
            assert loads_state(dumps_state(state)) == state, f"state after {span.name} does not round-trip"
            self.steps.append((span.name, span.attributes.get("action")))


@pytest.mark.parametrize("path", ["sync", "async"])
def test_aot_sc_010_k_sampled_plans_are_all_executed_and_the_majority_answer_wins(path):
    model = ScriptedModel(
        [
            json_reply(plan("add", 2, 3)),
            json_reply(plan("multiply", 2, 3)),
            json_reply(plan("subtract", 12, 6)),
        ]
    )
    hooks = Boundaries()
    bot = AoTBot(expressions=False, model=model, samples=3, hooks=[hooks])
    result = bot("q") if path == "sync" else asyncio.run(bot.arun("q"))
    # The three first plans are drafted at once, so which sample got which reply depends on the threads (sync).
    answers = [s["answer"] for s in result.samples]
    assert sorted(answers) == [5, 6, 6] and result.answer == 6 and result.votes == 2
    winner = answers.index(6)  # the earliest sample with the majority answer: its plan and record are the run's
    assert result.plan == result.samples[winner]["plan"] and result.record.answer == 6
    assert result.trace.of_kind("vote")[0].attributes["counts"] == [[answers.index(5), 1], [winner, 2]] or (
        winner == 0 and result.trace.of_kind("vote")[0].attributes["counts"] == [[0, 2], [answers.index(5), 1]])
    assert len(model.requests) == 3 and all(r.params["temperature"] == 0.7 for r in model.requests)
    assert all([m["role"] for m in r.messages] == ["system", "user"] for r in model.requests)  # fresh samples
    assert len(result.trace.of_kind("atom")) == 3  # every sampled plan was executed
    assert hooks.steps == [
        ("draft", "drafted"),
        ("plan", "valid"),
        ("execute", "done"),
        ("report", "sample"),
        ("plan", "valid"),
        ("execute", "done"),
        ("report", "sample"),
        ("plan", "valid"),
        ("execute", "done"),
        ("report", "vote"),
        ("vote", None),
    ]
    draft = next(s for s in result.trace.spans if s.name == "draft")
    assert len([s for s in result.trace.of_kind("model_call") if s.parent_id == draft.span_id]) == 3


@pytest.mark.parametrize("path", ["sync", "async"])
def test_aot_sc_050_the_samples_first_plans_are_requested_at_once(path):
    """Three samples' first plans from a model that takes 0.4 s a call: drafted together in about one call's
    time (one by one would take three); a re-plan still calls the model when its sample needs it."""
    model = ScriptedModel([json_reply(plan("add", 2, 2))] * 3 + [json_reply(plan("add", 1, 3))], latency_s=0.4)
    bot = AoTBot(expressions=False, model=model, samples=3)
    started = time.perf_counter()
    result = bot("q") if path == "sync" else asyncio.run(bot.arun("q"))
    assert time.perf_counter() - started < 1.0
    assert result.answer == 4 and result.votes == 3 and len(model.requests) == 3
    draft = next(s for s in result.trace.spans if s.name == "draft")
    calls = [s for s in result.trace.of_kind("model_call") if s.parent_id == draft.span_id]
    assert len(calls) == 3 and max(s.start for s in calls) < min(s.end for s in calls)  # they overlapped
    assert not any(s.parent_id != draft.span_id for s in result.trace.of_kind("model_call"))


def test_aot_sc_050_a_drafted_plan_that_fails_validation_is_replanned_by_a_model_call():
    model = ScriptedModel([json_reply(BAD), json_reply(BAD), json_reply(plan("add", 2, 2)), json_reply(plan("add", 1, 3))])
    result = asyncio.run(AoTBot(expressions=False, model=model, samples=2, max_replans=1).arun("q"))
    assert len(model.requests) == 4 and result.answer == 4 and result.votes == 2  # each sample re-planned once
    replan = model.requests[2]
    assert [m["role"] for m in replan.messages] == ["system", "user", "assistant", "user"]  # the errors shown
    assert "unknown tool 'sqrt'" in replan.messages[-1]["content"]


def test_aot_sc_010_the_given_temperature_is_used_and_one_sample_keeps_the_greedy_default():
    model = ScriptedModel([json_reply(plan("add", 1, 1))] * 2)
    AoTBot(expressions=False, model=model, samples=2, temperature=0.3)("q")
    assert [r.params for r in model.requests] == [{"temperature": 0.3}] * 2
    single = ScriptedModel([json_reply(plan("add", 1, 1))])
    result = AoTBot(expressions=False, model=single)("q")
    assert single.requests[0].params == {} and result.samples == [] and result.votes == 1


def test_aot_sc_030_a_sample_that_gives_up_does_not_end_the_run():
    model = ScriptedModel([json_reply(BAD), json_reply(DIVIDE_BY_ZERO), json_reply(plan("add", 2, 2))])
    bot = AoTBot(expressions=False, model=model, samples=3, max_replans=0, max_execution_replans=0)
    result = asyncio.run(bot.arun("q"))  # async: the drafts take the replies in order (tasks start in order)
    assert result.answer == 4 and result.votes == 1
    errors = [s["error"] for s in result.samples]
    assert errors[0].startswith("invalid plan: atom 1: unknown tool 'sqrt'")
    assert errors[1].startswith("atom 1 (tool 'divide') failed") and errors[2] is None


def test_aot_sc_030_when_every_sample_fails_the_last_ones_typed_error_is_raised():
    model = ScriptedModel([json_reply(BAD), json_reply(DIVIDE_BY_ZERO)])
    bot = AoTBot(expressions=False, model=model, samples=2, max_replans=0, max_execution_replans=0)
    with pytest.raises(AtomExecutionError, match="atom 1 \\(tool 'divide'\\)"):
        asyncio.run(bot.arun("q"))
    model = ScriptedModel([json_reply(DIVIDE_BY_ZERO), json_reply(BAD)])
    bot = AoTBot(expressions=False, model=model, samples=2, max_replans=0, max_execution_replans=0)
    with pytest.raises(PlanValidationError, match="unknown tool 'sqrt'"):
        asyncio.run(bot.arun("q"))
    for replies, error in (([BAD, BAD], PlanValidationError), ([DIVIDE_BY_ZERO] * 2, AtomExecutionError)):
        with pytest.raises(error):  # sync too (which sample got which reply depends on the threads)
            AoTBot(expressions=False, model=ScriptedModel([json_reply(r) for r in replies]), samples=2,
                   max_replans=0, max_execution_replans=0)("q")


def test_aot_sc_040_options_that_cannot_work_are_refused():
    with pytest.raises(ValueError, match="samples must be at least 1"):
        AoTBot(expressions=False, model=ScriptedModel(), samples=0)
    with pytest.raises(ValueError, match="samples=3 needs temperature > 0"):
        AoTBot(expressions=False, model=ScriptedModel(), samples=3, temperature=0)
    with pytest.raises(ValueError, match="cannot be combined with compensations"):
        AoTBot(expressions=False, model=ScriptedModel(), samples=2, compensations={"add": lambda: None})


def test_aot_sc_010_the_sample_and_vote_edges_exist_only_with_samples():
    one = AoTBot(expressions=False, model=ScriptedModel())
    assert one.compensate_node.successors == {"replan": one.plan_node} and not hasattr(one, "vote_node")
    assert one.report_node.successors == {}
    many = AoTBot(expressions=False, model=ScriptedModel(), samples=3)
    for node in (many.plan_node, many.report_node, many.compensate_node):
        assert node.successors["sample"] is many.plan_node and node.successors["vote"] is many.vote_node
    assert many.draft_node.successors == {"drafted": many.plan_node} and not hasattr(one, "draft_node")
    assert '-->|"vote"|' in str(many.to_mermaid())


def test_aot_out_010_output_type_validates_the_answer():
    """AoTBot(output_type=T): the computed answer is a T (lax: 437.0 is 437), or StructuredOutputError."""
    from llamabot.errors import StructuredOutputError

    plan = {"atoms": [{"id": 1, "kind": "tool", "name": "multiply", "input": {"a": 23, "b": 19}, "dependsOn": []},
                      {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    result = AoTBot(expressions=False, model=ScriptedModel([json.dumps(plan)]), output_type=int)("23 * 19?")
    assert result.answer == 437 and type(result.answer) is int
    with pytest.raises(StructuredOutputError, match="bool"):
        AoTBot(expressions=False, model=ScriptedModel([json.dumps(plan)]), output_type=bool)("23 * 19?")

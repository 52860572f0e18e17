"""The problem's rules in the search (TOT-RULE-*): proposals that break them are dropped before they are scored,
the model is told when every proposal broke one, and nothing else is judged by code."""

from __future__ import annotations

import pytest

from llamabot.evals.game24.prompts import Game24Prompts
from llamabot.evals.game24.steps import step_violation
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.reasoning.tot.graph import ToTBot
from llamabot.reasoning.tot.machine import Env, Status, new_machine, update
from llamabot.reasoning.tot.messages import EvaluateThoughts, Start, ThoughtsGenerated
from llamabot.reasoning.tot.persist import from_dict, to_dict
from llamabot.reasoning.tot.prompts import ToTPrompts
from tests.reasoning.tot.helpers import requested_ids, schema_name

PUZZLE = "4 9 10 13"


@pytest.mark.parametrize(("path", "step", "broken"), [
    ((), "13 - 9 = 4", None),
    ((), "10 - 4 = 6 (left: 6 9 13)", None),               # the note after the step is ignored
    (("13 - 9 = 4",), "4 * 4 = 16", None),                 # both 4s are left now
    ((), "4 + 9 = 12", "4 + 9 is 13, not 12"),             # wrong arithmetic
    ((), "4 * 5 = 20", "uses a number that is not left (4 9 10 13)"),
    (("13 - 9 = 4",), "13 + 10 = 23", "not left (4 10 4)"),
    ((), "9 / 3 = 3", "not left"),
    ((), "make 24", "is not a step 'a op b = c'"),
    (("4 * 5 = 20",), "9 + 10 = 19", "the steps before it are not valid"),
])
def test_tot_rule_010_game24_rules_are_arithmetic_and_numbers_left_only(path, step, broken):
    found = step_violation(PUZZLE, path, step)
    assert (found is None) if broken is None else (broken in found)
    if broken is None:  # a legal step is kept whether or not it can still reach 24 (no look-ahead)
        assert step_violation("1 1 1 1", (), "1 + 1 = 2") is None


def test_tot_rule_010_default_prompts_have_no_rules():
    assert ToTPrompts().step_rules("anything", (), "any thought") is None
    assert Game24Prompts().step_rules(PUZZLE, (), "4 + 9 = 12") is not None


def _check(problem, path, thought):
    return None if thought.startswith("ok") else f"{thought} breaks a rule"


def test_tot_rule_020_broken_proposals_are_dropped_before_evaluation_and_recorded():
    env = Env(step_check=_check)
    machine, (generate,) = update(new_machine(branching_factor=3), Start("problem", "run"), env)
    machine, (evaluate,) = update(machine, ThoughtsGenerated(generate.call_id, ("bad1", "ok1", "ok2")), env)
    assert isinstance(evaluate, EvaluateThoughts)
    assert [t.content for t in evaluate.thoughts] == ["ok1", "ok2"]
    assert machine.rejected_steps == ("bad1 breaks a rule",)
    assert from_dict(to_dict(machine)) == machine  # the record is part of the saved state


def test_tot_rule_020_when_every_proposal_breaks_a_rule_the_model_is_told_which():
    env = Env(step_check=_check)
    machine, (generate,) = update(new_machine(branching_factor=2), Start("problem", "run"), env)
    machine, (repair,) = update(machine, ThoughtsGenerated(generate.call_id, ("bad1", "bad2")), env)
    assert repair.phase == "generation" and "every proposed step breaks the rules" in repair.error
    assert "bad1 breaks a rule" in repair.error and machine.status is Status.GENERATING
    assert machine.rejected_steps == ("bad1 breaks a rule", "bad2 breaks a rule")


def test_tot_rule_030_the_bot_never_shows_a_broken_step_to_the_evaluator_unless_told_to():
    def responder(request):
        if schema_name(request) == "tot_thoughts":
            return json_reply({"thoughts": ["4 + 9 = 12", "13 - 9 = 4", "10 - 4 = 6"]})
        return json_reply({"scores": {i: 0.5 for i in requested_ids(request)}})

    options = {"prompts": Game24Prompts(), "min_depth": 3, "max_depth": 3, "max_model_calls": 2}
    checked = ScriptedModel(responder=responder)
    result = ToTBot(model=checked, **options)(PUZZLE)
    evaluations = [r.last_user_text for r in checked.requests if schema_name(r) == "tot_scores"]
    assert evaluations and all("4 + 9 = 12" not in text for text in evaluations)
    assert "4 + 9 = 12: 4 + 9 is 13, not 12" in result.diagnostics["rejected_steps"]

    unchecked = ScriptedModel(responder=responder)
    result = ToTBot(model=unchecked, check_steps=False, **options)(PUZZLE)
    assert any("4 + 9 = 12" in r.last_user_text for r in unchecked.requests if schema_name(r) == "tot_scores")
    assert result.diagnostics["rejected_steps"] == []

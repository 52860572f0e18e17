"""Planning with expressions (AOT-EXPR-*): with ``expressions=True`` each atom computes one arithmetic expression
with the ``calculate`` tool (earlier results referenced inside it); the program reads and computes every
expression, so the model still never computes. Also: answers scored at the precision of a rounded gold."""

from __future__ import annotations

import json

import pytest

from llamabot.evals.aot import (
    method_prompts,
    method_settings,
)
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.reasoning.aot import AoTBot, replay_plan
from tests.reasoning.aot.cli_helpers import run_aot_cli

QUESTION = "Amy had 4 pens and 21 pencils and gave 23 away. How many are left?"  # its plans' numbers

PLAN = {
    "atoms": [
        {"id": 1, "kind": "tool", "name": "calculate", "input": {"expression": "4 + 21"}, "dependsOn": []},
        {
            "id": 2,
            "kind": "tool",
            "name": "calculate",
            "input": {"expression": "(<result_of_1> - 23) * 3"},
            "dependsOn": [1],
        },
        {"id": 3, "kind": "final", "name": "report", "dependsOn": [2]},
    ]
}


def test_aot_expr_010_the_planner_sees_calculate_and_worked_examples_of_it():
    model = ScriptedModel([json_reply(PLAN)])
    bot = AoTBot(model=model, expressions=True)
    assert list(bot.tools) == ["calculate"]  # the default tools become just calculate
    bot(QUESTION)
    prompt = model.requests[0].messages[0]["content"]
    assert "- calculate(expression: string)" in prompt and "<result_of_N>" in prompt
    examples = [json.loads(part.split("\n")[0]) for part in prompt.split("Plan: ")[1:]]
    assert len(examples) == 2
    assert {a["name"] for e in examples for a in e["atoms"]} == {"calculate", "report"}
    schema = model.requests[0].response_format["json_schema"]["schema"]
    names = [v["properties"]["name"]["const"] for v in schema["properties"]["atoms"]["items"]["anyOf"]]
    assert names == ["calculate", "report"]



def test_aot_expr_010_on_by_default_with_the_calculator_off_with_your_tools_or_sub_questions():
    from llamabot.toolkits.calculator import CALCULATOR_TOOLS, add

    assert list(AoTBot(model=ScriptedModel([])).tools) == ["calculate"]  # the measured default
    assert list(AoTBot([add], model=ScriptedModel([])).tools) == ["add"]
    assert "calculate" not in AoTBot(model=ScriptedModel([]), subquestions=True).tools
    off = AoTBot(model=ScriptedModel([]), expressions=False)
    assert list(off.tools) == [t.__name__ for t in CALCULATOR_TOOLS]
    assert "calculate" not in off.plan_node.system["content"]


def test_aot_expr_010_given_tools_keep_theirs_and_gain_calculate():
    from llamabot.toolkits.calculator import add

    bot = AoTBot([add], model=ScriptedModel([]), expressions=True)
    assert list(bot.tools) == ["calculate", "add"]
    with pytest.raises(ValueError, match="choose one"):
        AoTBot(model=ScriptedModel([]), expressions=True, subquestions=True)


def test_aot_expr_020_expressions_with_embedded_references_run_exactly():
    result = AoTBot(model=ScriptedModel([json_reply(PLAN)]), expressions=True)(QUESTION)
    assert result.answer == 6
    assert [result.record.atoms[i].inputs for i in (1, 2)] == [
        {"expression": "4 + 21"},
        {"expression": "(25 - 23) * 3"},
    ]
    assert result.plan.atom(2).depends_on == [1]
    assert replay_plan(PLAN).answer == 6  # a saved plan replays with the default tools


def test_aot_expr_020_a_bad_expression_is_shown_to_the_planner_who_writes_the_plan_again():
    bad = {
        "atoms": [
            {
                "id": 1,
                "kind": "tool",
                "name": "calculate",
                "input": {"expression": "21 / (4 - 4)"},
                "dependsOn": [],
            },
            {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]},
        ]
    }
    model = ScriptedModel([json_reply(bad), json_reply(PLAN)])
    result = AoTBot(model=model, expressions=True)(QUESTION)
    assert result.answer == 6
    failure = model.requests[1].messages[-1]["content"]
    assert "division by zero: 21 / 0" in failure and "atom 1" in failure


def test_aot_expr_030_eval_reports_record_the_option_and_the_prompt_it_sent():
    assert method_settings(("aot",))["aot"]["expressions"] is True  # the bot's default, recorded as what ran
    assert method_settings(("aot",), {"expressions": False})["aot"]["expressions"] is False
    assert method_settings(("aot",), {"subquestions": True})["aot"]["expressions"] is False
    assert method_settings(("aot",), {"expressions": None})["aot"]["expressions"] is True
    on = method_prompts(("aot",))["aot"][0]
    assert on != method_prompts(("aot",), {"expressions": False})["aot"][0] and "calculate(expression: string)" in on


def test_aot_expr_030_the_cli_flag_reaches_the_planner():
    result, model = run_aot_cli(PLAN, "--expressions", name="aot-expr")
    assert "answer: 6" in result.output
    assert "calculate(expression" in model.requests[0].messages[0]["content"]

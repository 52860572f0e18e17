"""Planning as sub-questions (AOT-SQ-*): with ``subquestions=True`` the planner's prompt and schema ask every atom
to say, in words, what it finds out before its tool call; the plan runs exactly as before."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from llamabot.evals.aot import method_prompts, method_settings
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.reasoning.aot import AoTBot
from llamabot.reasoning.aot.plan import QUESTION_MAX_LENGTH, Atom, Plan
from llamabot.reasoning.aot.prompts import planner_prompt
from llamabot.reasoning.aot.schema import plan_schema
from llamabot.toolkits.calculator import CALCULATOR_TOOLS
from llamabot.tools.tool import as_tool
from tests.reasoning.aot.cli_helpers import run_aot_cli

TOOLS = {t.name: t for t in map(as_tool, CALCULATOR_TOOLS)}
PLAN = {
    "atoms": [
        {
            "id": 1,
            "question": "How many pens in all?",
            "kind": "tool",
            "name": "add",
            "input": {"a": 4, "b": 21},
            "dependsOn": [],
        },
        {
            "id": 2,
            "question": "How many are left?",
            "kind": "tool",
            "name": "subtract",
            "input": {"a": "<result_of_1>", "b": 23},
            "dependsOn": [1],
        },
        {"id": 3, "kind": "final", "name": "report", "dependsOn": [2]},
    ]
}


def test_aot_sq_010_the_schema_puts_a_required_question_before_the_tool_of_every_atom():
    schema = plan_schema(TOOLS, questions=True)
    variants = schema["properties"]["atoms"]["items"]["anyOf"]
    for variant in variants[:-1]:  # every tool atom; the last is the final report
        assert list(variant["properties"])[:3] == ["id", "question", "kind"]
        assert "question" in variant["required"]
        assert variant["properties"]["question"]["maxLength"] == QUESTION_MAX_LENGTH
    assert "question" not in variants[-1]["properties"]
    plain = plan_schema(TOOLS)
    assert all("question" not in v["properties"] for v in plain["properties"]["atoms"]["items"]["anyOf"])


def test_aot_sq_010_the_prompt_asks_for_sub_questions_and_shows_them_in_its_example():
    prompt = planner_prompt(TOOLS, {}, questions=True)
    assert '"question": <what this step finds = how, in words>' in prompt
    example = json.loads(prompt.rsplit("Plan: ", 1)[1])
    assert all("question" in a for a in example["atoms"] if a["kind"] != "final")
    assert '"question"' not in planner_prompt(TOOLS, {})


def test_aot_sq_020_a_plan_with_questions_runs_like_one_without_and_keeps_them():
    model = ScriptedModel([json_reply(PLAN)])
    result = AoTBot(model=model, subquestions=True)("Amy had 4 music files and 21 videos and deleted 23. How many are left?")
    assert result.answer == 2
    assert [a.question for a in result.plan.atoms] == ["How many pens in all?", "How many are left?", None]
    seen = model.requests
    schema = seen[0].response_format["json_schema"]["schema"]
    assert "question" in schema["properties"]["atoms"]["items"]["anyOf"][0]["required"]
    assert "sub-question" in seen[0].messages[0]["content"]


def test_aot_sq_020_old_plans_without_questions_still_load_and_questions_are_bounded():
    plain = {"atoms": [{k: v for k, v in a.items() if k != "question"} for a in PLAN["atoms"]]}
    assert Plan.model_validate(plain).atoms[0].question is None
    with pytest.raises(ValidationError, match="question"):
        Atom.model_validate({**PLAN["atoms"][0], "question": "x" * (QUESTION_MAX_LENGTH + 1)})


def test_aot_sq_030_eval_reports_record_the_option_and_the_prompt_it_sent():
    assert method_settings(("aot",))["aot"]["subquestions"] is False
    on = method_settings(("aot",), {"subquestions": True})["aot"]
    assert on["subquestions"] is True
    prompts_on = method_prompts(("aot",), {"subquestions": True})["aot"][0]
    assert prompts_on != method_prompts(("aot",))["aot"][0] and "sub-question" in prompts_on


def test_aot_sq_010_the_cli_flag_reaches_the_planner():
    result, model = run_aot_cli(PLAN, "--subquestions", name="aot-sq")
    assert "answer: 2" in result.output
    assert "sub-question" in model.requests[0].messages[0]["content"]

"""Reasoning before the plan (AOT-RSN-*): by default the planner's prompt and schema ask the plan to open with what
the question asks and how it follows from the question's numbers, in words, before any atom; the reasoning never
executes, and the program still computes everything."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from llamabot.evals.aot import Attempt, method_prompts, method_settings, run_aot
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.reasoning.aot import AoTBot
from llamabot.reasoning.aot.plan import REASONING_MAX_LENGTH, Plan
from llamabot.reasoning.aot.prompts import REASONING_INSTRUCTION, planner_prompt
from llamabot.reasoning.aot.schema import plan_schema
from llamabot.toolkits.calculator import CALCULATOR_TOOLS, EXPRESSION_TOOLS
from llamabot.tools.tool import as_tool
from tests.reasoning.aot.cli_helpers import run_aot_cli

QUESTION = "Amy had 4 pens and 21 pencils and gave 23 away. How many are left?"  # its plans' numbers

TOOLS = {t.name: t for t in map(as_tool, EXPRESSION_TOOLS)}
REASONING = "Asked: the pens left. Pens at first = 4 red + 21 blue; left = pens at first - 23 given away."
PLAN = {
    "reasoning": REASONING,
    "atoms": [
        {"id": 1, "kind": "tool", "name": "calculate", "input": {"expression": "4 + 21"}, "dependsOn": []},
        {"id": 2, "kind": "tool", "name": "calculate", "input": {"expression": "<result_of_1> - 23"}, "dependsOn": [1]},
        {"id": 3, "kind": "final", "name": "report", "dependsOn": [2]},
    ],
}


def test_aot_rsn_010_the_schema_asks_for_bounded_reasoning_before_the_atoms():
    schema = plan_schema(TOOLS, reasoning=True)
    assert list(schema["properties"]) == ["reasoning", "atoms"]
    assert schema["required"] == ["reasoning", "atoms"]
    assert schema["properties"]["reasoning"] == {"type": "string", "minLength": 1, "maxLength": REASONING_MAX_LENGTH}
    assert list(plan_schema(TOOLS)["properties"]) == ["atoms"]


@pytest.mark.parametrize("form", [{"expressions": True}, {}, {"questions": True}])
def test_aot_rsn_010_every_form_of_prompt_asks_for_it_and_shows_it_in_each_example(form):
    tools = TOOLS if form.get("expressions") else {t.name: t for t in map(as_tool, CALCULATOR_TOOLS)}
    prompt = planner_prompt(tools, {}, reasoning=True, **form)
    assert 'First write "reasoning", in words' in prompt and "Compute nothing there." in prompt
    examples = [json.loads(line.split("Plan: ", 1)[1]) for line in prompt.splitlines() if line.startswith("Plan: ")]
    assert examples and all(e["reasoning"].startswith("Asked: ") for e in examples)
    assert list(examples[0]) == ["reasoning", "atoms"]  # the order the schema asks for
    plain = planner_prompt(tools, {}, **form)
    assert "reasoning" not in plain
    stripped = prompt.replace(REASONING_INSTRUCTION, "", 1)
    for example in examples:  # otherwise the same prompt, the examples without their reasoning
        stripped = stripped.replace(f'"reasoning": {json.dumps(example["reasoning"])}, ', "")
    assert stripped == plain


def test_aot_rsn_020_the_reasoning_never_runs_and_the_result_keeps_it():
    model = ScriptedModel([json_reply(PLAN)])
    result = AoTBot(model=model)("Amy had 4 red pens and 21 blue pens. She gave away 23. How many are left?")
    assert result.answer == 2
    assert result.plan.reasoning == REASONING
    assert result.to_dict()["plan"]["reasoning"] == REASONING
    assert set(result.record.atoms) <= {1, 2, 3}  # no atom for the words
    request = model.requests[0]
    assert request.response_format["json_schema"]["schema"]["required"] == ["reasoning", "atoms"]
    assert 'First write "reasoning"' in request.messages[0]["content"]


def test_aot_rsn_020_off_the_planner_is_asked_for_atoms_alone():
    model = ScriptedModel([json_reply({"atoms": PLAN["atoms"]})])
    result = AoTBot(model=model, reasoning=False)(QUESTION)
    assert result.answer == 2 and result.plan.reasoning is None
    assert model.requests[0].response_format["json_schema"]["schema"]["required"] == ["atoms"]
    assert "reasoning" not in model.requests[0].messages[0]["content"]


def test_aot_rsn_020_plans_without_it_still_load_and_it_is_bounded():
    assert Plan.model_validate({"atoms": PLAN["atoms"]}).reasoning is None
    assert Plan.load(json.dumps(PLAN)).reasoning == REASONING
    with pytest.raises(ValidationError, match="reasoning"):
        Plan.model_validate({**PLAN, "reasoning": "x" * (REASONING_MAX_LENGTH + 1)})


def test_aot_rsn_030_eval_reports_record_the_option_the_prompt_and_each_plan():
    assert method_settings(("aot",))["aot"]["reasoning"] is True
    assert method_settings(("aot",), {"reasoning": False})["aot"]["reasoning"] is False
    on, off = method_prompts(("aot",))["aot"][0], method_prompts(("aot",), {"reasoning": False})["aot"][0]
    assert on != off and 'First write "reasoning"' in on and "reasoning" not in off
    outcome = run_aot(AoTBot(model=ScriptedModel([json_reply(PLAN)])), QUESTION)
    assert outcome.metrics["plan"]["reasoning"] == REASONING
    attempt = Attempt("p1", 2.0, 2.0, True, 0.1, 10, plan=outcome.metrics["plan"])
    assert attempt.plan["atoms"][0]["input"] == {"expression": "4 + 21"}


def test_aot_rsn_030_the_cli_flag_reaches_the_planner():
    _, model = run_aot_cli({"atoms": PLAN["atoms"]}, "--no-reasoning", name="aot-rsn")
    assert "reasoning" not in model.requests[0].messages[0]["content"]
    result, model = run_aot_cli(PLAN, name="aot-rsn-on")
    assert "answer: 2" in result.output
    assert 'First write "reasoning"' in model.requests[0].messages[0]["content"]

"""AOT-EVAL-070: every AoT miss of an evaluation falls in one class, from the plan it ran and the gold equation;
``llamabot eval aot`` prints the classes and records them in its report. The problems here are made up for the
test (not items of any evaluation set)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.evals.aot import Attempt, Problem, load_problems
from llamabot.evals.aot_misses import CLASSES, classify, miss_classes, numbers, plan_numbers
from llamabot.models.scripted import ScriptedModel, json_reply, text
from llamabot.models.scripted_provider import register_scripted_provider

QUESTION = "Ann had 12 apples and 5 pears. She ate 3 apples. How many apples are left?"
EQUATION = "( 12.0 - 3.0 )"


def plan(*expressions: str) -> dict:
    atoms = [{"id": i, "kind": "tool", "name": "calculate", "input": {"expression": e}, "dependsOn": []}
             for i, e in enumerate(expressions, 1)]
    return {"atoms": [*atoms, {"id": len(atoms) + 1, "kind": "final", "name": "report", "dependsOn": [len(atoms)]}]}


def attempt(predicted, the_plan=None, gold=9.0) -> dict:
    return {"problem": "p", "gold": gold, "predicted": predicted, "correct": False, "plan": the_plan}


def test_aot_eval_070_numbers_are_read_from_text_and_plans_but_references_are_not():
    assert numbers("( 12.0 - 3.0 ) * 2") == {12.0: 1, 3.0: 1, 2.0: 1}
    assert numbers("<result_of_12> - 3") == {3.0: 1}
    assert plan_numbers({"atoms": [{"input": {"a": 4, "b": "<result_of_1>", "flag": True}},
                                   {"input": {"expression": "4 + 2.5"}}, {"kind": "final"}]}) == {4.0: 2, 2.5: 1}


@pytest.mark.parametrize(("case", "expected"), [
    (attempt(None), "no_answer"),
    (attempt(-9.0, plan("3 - 12")), "sign"),
    (attempt(4.0, plan("12 - 8")), "literal"),  # 8 is in no line of the question
    (attempt(4.0, plan("12 - 3 - 5")), "distractor"),
    (attempt(12.0, plan("12")), "missing"),
    (attempt(7.0, plan("12 - 5")), "wrong_quantity"),
    (attempt(15.0, plan("12 + 3")), "operation"),
    (attempt(15.0), "unknown"),  # an old report without the plan
])
def test_aot_eval_070_each_miss_falls_in_the_first_class_that_fits(case, expected):
    assert classify(case, QUESTION, EQUATION) == expected


def test_aot_eval_070_counts_skip_correct_attempts_and_keep_the_class_order():
    problems = [Problem("a", QUESTION, 9.0, equation=EQUATION), Problem("b", QUESTION, 9.0, equation=EQUATION)]
    attempts = [Attempt("a", 9.0, 15.0, False, 1.0, 10, plan=plan("12 + 3")),
                {**attempt(None), "problem": "b"},
                Attempt("b", 9.0, 9.0, True, 1.0, 10, plan=plan("12 - 3"))]
    counts = miss_classes(attempts, problems)
    assert counts == {"no_answer": 1, "operation": 1} and list(counts) == [c for c in CLASSES if c in counts]
    unknown = Problem("a", QUESTION, 9.0)  # no gold equation: nothing to compare the plan with
    assert miss_classes(attempts[:1], [unknown]) == {"unknown": 1}


def test_aot_eval_070_datasets_carry_their_gold_equations(tmp_path):
    multi = tmp_path / "m.json"
    multi.write_text(json.dumps([{"iIndex": 7, "sQuestion": " Q? ", "lSolutions": [3.0], "lEquations": ["X=(1+2)"]}]))
    svamp = tmp_path / "s.json"
    svamp.write_text(json.dumps([{"ID": "x", "Body": "B.", "Question": "Q?", "Answer": 2, "Equation": "( 4.0 - 2.0 )"}]))
    arith = tmp_path / "a.csv"
    arith.write_text("idx,expression,answer\n0,1+2,3\n")
    assert load_problems("multiarith", multi)[0].equation == "X=(1+2)"
    assert load_problems("svamp", svamp)[0].equation == "( 4.0 - 2.0 )"
    assert load_problems("arith", arith)[0].equation == "1+2"


def test_aot_eval_070_the_eval_command_prints_and_records_the_classes(tmp_path):
    data = tmp_path / "s.json"
    data.write_text(json.dumps([{"ID": "p1", "Body": QUESTION.rsplit(".", 1)[0] + ".", "Question": "How many apples "
                                 "are left?", "Answer": 9, "Equation": EQUATION}]))
    reversed_plan = {"reasoning": "Asked: apples left.", **plan("3 - 12")}

    def responder(request):
        return json_reply(reversed_plan) if request.response_format else text("9")

    name = register_scripted_provider(ScriptedModel(responder=responder, name="aot-miss"), prefix="scripted-aot-miss")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", "aot", str(data), "--dataset", "svamp", "--methods", "aot,direct",
                                      "--model", name, "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["misses"] == {"aot": {"sign": 1}} and "AoT misses: sign 1" in result.output
    assert report["methods"]["aot"]["attempts"][0]["plan"]["reasoning"] == "Asked: apples left."

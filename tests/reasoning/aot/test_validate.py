"""Plan validation, without any model: every rule, every error reported, each naming its atom."""

from __future__ import annotations

import pytest

from llamabot.reasoning.aot import Plan, PlanValidationError, validate_plan
from llamabot.toolkits.calculator import CALCULATOR_TOOLS
from llamabot.toolkits.decisions import DECISION_TOOLS

TOOLS = {t.tool.name: t.tool for t in CALCULATOR_TOOLS}
DECISIONS = {t.tool.name: t.tool for t in DECISION_TOOLS}


def plan(*atoms: dict) -> Plan:
    return Plan.model_validate({"atoms": list(atoms)})


def tool(i, name, deps=(), **inputs):
    return {"id": i, "kind": "tool", "name": name, "input": inputs, "dependsOn": list(deps)}


def final(i, deps):
    return {"id": i, "kind": "final", "name": "report", "dependsOn": list(deps)}


def errors_of(p: Plan) -> list[tuple[int | None, str]]:
    with pytest.raises(PlanValidationError) as info:
        validate_plan(p, TOOLS, DECISIONS)
    return [(e.atom, e.code) for e in info.value.errors]


def test_aot_val_010_a_valid_plan_passes_unchanged_but_for_added_dependencies():
    p = plan(tool(1, "add", a=15, b=7), tool(2, "multiply", a="<result_of_1>", b=3), final(3, [2]))
    validated, notes = validate_plan(p, TOOLS, DECISIONS)
    assert validated.atom(2).depends_on == [1]
    assert notes == ["atom 2: added 1 to dependsOn (it uses <result_of_1>)"]


def test_aot_val_020_duplicate_ids():
    assert (1, "duplicate_id") in errors_of(plan(tool(1, "add", a=1, b=2), tool(1, "add", a=1, b=2), final(2, [1])))


def test_aot_val_030_unknown_tools_and_decisions_with_a_hint_about_the_kind():
    found = errors_of(plan(
        tool(1, "sqrt", a=4), {"id": 2, "kind": "decision", "name": "vote", "input": {}, "dependsOn": []},
        {"id": 3, "kind": "tool", "name": "average", "input": {"values": [1, 2]}, "dependsOn": []}, final(4, [1]),
    ))
    assert (1, "unknown_tool") in found and (2, "unknown_decision") in found and (3, "unknown_tool") in found
    with pytest.raises(PlanValidationError, match="it is a decision: use kind 'decision'"):
        validate_plan(plan({"id": 1, "kind": "tool", "name": "average", "input": {"values": [1]}}, final(2, [1])),
                      TOOLS, DECISIONS)


def test_aot_val_040_dependency_on_a_missing_atom():
    assert (2, "missing_dependency") in errors_of(plan(tool(1, "add", a=1, b=2), tool(2, "add", [9], a=1, b=2), final(3, [2])))


def test_aot_val_050_cycles_are_found_and_name_their_atoms():
    with pytest.raises(PlanValidationError) as info:
        validate_plan(plan(tool(1, "add", [2], a=1, b=2), tool(2, "add", [1], a=1, b=2), final(3, [2])), TOOLS)
    cycle = [e for e in info.value.errors if e.code == "cycle"]
    assert cycle and "[1, 2]" in cycle[0].message
    assert (1, "cycle") in errors_of(plan(tool(1, "add", [1], a=1, b=2), final(2, [1])))  # a self-loop


def test_aot_val_050_a_1200_atom_forward_chain_is_checked_without_overflowing_the_stack():
    """Regression: the recursive cycle search overflowed on a long chain of atoms that depend on later ones."""
    n = 1200
    chain = [tool(i, "add", [i + 1] if i < n else [], a=1, b=1) for i in range(1, n + 1)]
    validated, _ = validate_plan(plan(*chain, final(n + 1, [1])), TOOLS, DECISIONS, max_atoms=None)
    assert len(validated.atoms) == n + 1
    looped = [tool(i, "add", [i + 1] if i < n else [1], a=1, b=1) for i in range(1, n + 1)]
    cycle = [e for e in errors_of_all(plan(*looped, final(n + 1, [1])), max_atoms=None) if e.code == "cycle"]
    assert len(cycle) == 1 and cycle[0].atom == 1 and "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14" in cycle[0].message


def errors_of_all(p: Plan, **options):
    with pytest.raises(PlanValidationError) as info:
        validate_plan(p, TOOLS, DECISIONS, **options)
    return info.value.errors


def test_aot_val_060_references_to_missing_or_later_atoms():
    found = errors_of(plan(
        tool(1, "add", a="<result_of_2>", b=1), tool(2, "add", a=1, b="<result_of_7>"),
        tool(3, "add", a="<result_of_3>", b=1), final(4, [1, 2, 3]),
    ))
    assert (1, "forward_reference") in found and (2, "missing_reference") in found and (3, "forward_reference") in found


def test_aot_val_070_inputs_must_match_the_tool_argument_schema():
    found = errors_of(plan(
        tool(1, "add", a="ten", b=1), tool(2, "add", a=1), tool(3, "add", a=1, b=2, c=3), final(4, [1, 2, 3]),
    ))
    assert (1, "bad_input") in found and (2, "missing_input") in found and (3, "unknown_input") in found
    ok = plan(tool(1, "add", a=1, b=2), {"id": 2, "kind": "decision", "name": "average",
                                          "input": {"values": ["<result_of_1>", 4]}}, final(3, [2]))
    assert validate_plan(ok, TOOLS, DECISIONS)[0].atom(2).depends_on == [1]  # references inside lists count


def test_aot_val_080_exactly_one_final_that_reports_something():
    assert (None, "final_count") in errors_of(plan(tool(1, "add", a=1, b=2), tool(2, "add", a=3, b=4)))
    assert (None, "final_count") in errors_of(plan(tool(1, "add", a=1, b=2), final(2, [1]), final(3, [1])))
    assert (2, "empty_final") in errors_of(plan(tool(1, "add", a=1, b=2), final(2, [])))
    assert (2, "final_not_last") in errors_of(plan(tool(1, "add", a=1, b=2), final(2, [1]), tool(3, "add", [2], a=1, b=2)))


def test_aot_val_085_a_plan_without_a_final_reports_its_one_last_atom():
    checked, notes = validate_plan(plan(tool(1, "add", a=1, b=2), tool(4, "add", [1], a="<result_of_1>", b=3)), TOOLS)
    assert checked.final is not None and checked.final.id == 5 and checked.final.depends_on == [4]
    assert checked.atoms[-1].name == "report"
    assert notes == ["added final atom 5 reporting atom 4 (the plan had no final atom)"]
    assert validate_plan(checked, TOOLS) == (checked, [])  # a normalised plan is valid as it is


def test_aot_val_085_the_bot_runs_a_plan_that_forgot_its_final_atom_without_a_replan():
    from llamabot.models.scripted import ScriptedModel, json_reply
    from llamabot.reasoning.aot import AoTBot

    forgot = {"atoms": [{"id": 1, "kind": "tool", "name": "calculate", "input": {"expression": "7 + 5"}},
                        {"id": 2, "kind": "tool", "name": "calculate", "input": {"expression": "<result_of_1> - 2"},
                         "dependsOn": [1]}]}
    model = ScriptedModel([json_reply(forgot)])
    result = AoTBot(model=model)("Mia had 7 apples, got 5 more and ate 2. How many are left?")
    assert result.answer == 10 and result.replans == 0 and len(model.requests) == 1
    assert "added final atom 3 reporting atom 2 (the plan had no final atom)" in result.notes


def test_aot_val_087_a_number_the_question_does_not_hold_is_a_computed_literal():
    from llamabot.reasoning.aot.literals import CONSTANTS, question_numbers

    allowed = question_numbers("Olivia had 3 dollars, collected 1,049 more and spent $ 2.50 on 12 pens.")
    assert {3.0, 1049.0, 2.5} <= allowed and CONSTANTS <= allowed and 1.0 not in allowed - CONSTANTS
    written = plan(tool(1, "add", a=3, b=1049), tool(2, "subtract", [1], a="<result_of_1>", b=2.5),
                   tool(3, "add", [2], a=1052, b=-3), tool(4, "add", [3], a="<result_of_3>", b=60), final(5, [4]))
    with pytest.raises(PlanValidationError) as info:
        validate_plan(written, TOOLS, literals=allowed)
    issues = [(i.atom, i.code) for i in info.value.errors]
    assert issues == [(3, "computed_literal")]  # the question's numbers, -3 (3 subtracted) and constants pass
    assert str(info.value.errors[0]).startswith("atom 3: 1052 is not a number of the question: never compute")
    assert validate_plan(written, TOOLS)[0].atoms[2].input["a"] == 1052  # not checked without literals


def test_aot_val_087_expressions_are_read_for_their_numbers_and_the_bot_replans():
    from llamabot.models.scripted import ScriptedModel, json_reply
    from llamabot.reasoning.aot import AoTBot
    from llamabot.reasoning.aot.literals import numbers

    assert numbers("<result_of_12> * 2.5 - (3 + 1,250)") == {2.5: 1, 3.0: 1, 1250.0: 1}
    computed = {"atoms": [{"id": 1, "kind": "tool", "name": "calculate", "input": {"expression": "52 - 49"}},
                          {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    fixed = {"atoms": [{"id": 1, "kind": "tool", "name": "calculate", "input": {"expression": "3 + 49 - 49"}},
                       {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    model = ScriptedModel([json_reply(computed), json_reply(fixed)])
    result = AoTBot(model=model)("Olivia had 3 dollars and collected 49 more. She spent 49. How much is left?")
    assert result.answer == 3 and result.replans == 1
    assert "atom 1: 52 is not a number of the question" in model.requests[1].messages[-1]["content"]
    from llamabot.toolkits.calculator import EXPRESSION_TOOLS

    mine = AoTBot(EXPRESSION_TOOLS, model=ScriptedModel([json_reply(computed)]))("the same question, 3 and 49")
    assert mine.answer == 3 and mine.replans == 0  # a bot given its own tools is not checked


def test_aot_val_090_every_error_is_reported_at_once():
    found = errors_of(plan(tool(1, "sqrt", a=1), tool(1, "add", [5], a="x", b=1)))
    assert {code for _, code in found} >= {"unknown_tool", "duplicate_id", "missing_dependency", "bad_input", "final_count"}


def test_aot_val_100_a_bare_seed_plan_without_depends_on_loads_and_validates():
    seed = {"atoms": [
        {"id": 1, "kind": "tool", "name": "add", "input": {"a": 15, "b": 7}},
        {"id": 2, "kind": "tool", "name": "multiply", "input": {"a": "<result_of_1>", "b": 3}},
        {"id": 3, "kind": "tool", "name": "subtract", "input": {"a": "<result_of_2>", "b": 10}},
        {"id": 4, "kind": "final", "name": "report", "dependsOn": [3]},
    ]}
    validated, notes = validate_plan(Plan.load(seed), TOOLS)
    assert [a.depends_on for a in validated.atoms] == [[], [1], [2], [3]] and len(notes) == 2

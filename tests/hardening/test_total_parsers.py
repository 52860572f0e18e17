"""Issue #13, defect 2: degenerate replies get a repair or a typed error, never a crash (HARD-TOT-*).

Each input here crashed before: 1,000 ``[`` (RecursionError), a 400-digit score (OverflowError), 5,000 digits
(Python's 4,300-digit integer limit: a bare ValueError), a 1,200-atom plan. Each now reaches the path the
caller already handles: the agent counts it against ``max_errors``, ToT spends its retry budget, ANoT ranks,
AoT re-plans.
"""

from __future__ import annotations

import pytest

from llamabot import AgentBot, ScriptedModel
from llamabot.errors import ToolArgumentsError
from llamabot.evals.game24.check import PuzzleError, check_game24, parse_puzzle
from llamabot.evals.game24.steps import parse_step
from llamabot.models.scripted import json_reply, malformed_tool_call, text, tool_call
from llamabot.models.tool_call_text import extract_tool_calls
from llamabot.reasoning.anot.logic import LogicSyntaxError, parse_logic
from llamabot.reasoning.anot.ranking import parse_index_list, parse_ranking
from llamabot.reasoning.aot import AoTBot, Plan, PlanValidationError, validate_plan
from llamabot.reasoning.aot.plan import references, resolve
from llamabot.reasoning.tot.machine import Status, new_machine, update
from llamabot.reasoning.tot.messages import CallLLMStream, LLMResult, Start
from llamabot.reasoning.tot.parsing import parse_scores, parse_thoughts
from llamabot.toolkits.calculator import CALCULATOR_TOOLS, add

TOOLS = {t.tool.name: t.tool for t in CALCULATOR_TOOLS}
DEEP = "[" * 1000
DIGITS = "1" * 5000


def test_hard_tot_010_text_tool_calls_with_deep_nesting_are_not_calls():
    assert extract_tool_calls('{"name": "add", "arguments": ' + DEEP, {"add"}) == []
    assert extract_tool_calls(f"<tool_call>{DEEP}</tool_call>", {"add"}) == []
    assert extract_tool_calls('{"name": "add", "arguments": {"a": ' + DIGITS + "}}", {"add"}) == []


@pytest.mark.parametrize("raw", ['{"a": ' + DEEP, DEEP, '{"a": ' + DIGITS + ', "b": 1}', DIGITS])
def test_hard_tot_010_tool_arguments_that_crashed_the_json_parser_are_tool_arguments_errors(raw):
    with pytest.raises(ToolArgumentsError) as info:
        add.tool.validate(raw)
    assert info.value.tool == "add" and info.value.raw_arguments == raw


def test_hard_tot_020_the_agent_counts_crashing_arguments_against_max_errors():
    """Regression: RecursionError escaped the decision and killed the run without counting it."""
    model = ScriptedModel([malformed_tool_call("add", '{"a": ' + DEEP), malformed_tool_call("add", DIGITS),
                           tool_call("respond_to_user", response="recovered")])
    bot = AgentBot(tools=[add], model=model, max_errors=3)
    assert bot("q") == "recovered"
    with pytest.raises(ValueError, match="invalid tool calls in a row"):
        AgentBot(tools=[add], model=ScriptedModel([malformed_tool_call("add", DEEP)] * 2), max_errors=1)("q")


def test_hard_tot_020_the_agent_survives_text_that_looks_like_a_deeply_nested_tool_call():
    model = ScriptedModel([text('{"name": "add", "arguments": ' + DEEP)])
    assert AgentBot(tools=[add], model=model)("q").startswith('{"name": "add"')  # plain text: the answer


def test_hard_tot_030_tot_parsers_return_nothing_read_for_crashing_replies():
    assert parse_thoughts(DEEP) == ([], "none")
    assert parse_scores(DEEP, ["a"]) == ({}, "none")
    assert parse_scores('{"t1": ' + "9" * 400 + "}", ["a"]) == ({}, "none")  # OverflowError before
    assert parse_scores('{"scores": {"' + DIGITS + '": 0.5}}', ["a"]) == ({}, "none")
    assert parse_scores("```json\n" + DEEP + "\n```", ["a"]) == ({}, "none")


def test_hard_tot_030_a_crashing_reply_spends_the_tot_retry_budget():
    machine, directives = update(new_machine(max_parse_retries=1), Start("problem", "run"))
    machine, directives = update(machine, LLMResult(directives[0].call_id, text=DEEP))
    assert machine.status is Status.GENERATING and isinstance(directives[0], CallLLMStream)
    assert machine.parse_retries["generation"] == 1


def test_hard_tot_040_game24_steps_puzzles_and_checks_never_crash_on_digits():
    assert parse_step(DIGITS + " + 1 = 2") is None  # past the integer-digit limit: not a step
    assert parse_step("1" * 6000 + "x") is None
    assert check_game24("4 9 10 13", DIGITS) is False
    with pytest.raises(PuzzleError, match="digits"):
        parse_puzzle(DIGITS)
    with pytest.raises(PuzzleError) as info:
        parse_puzzle("x" * 100_000)
    assert len(str(info.value)) < 400  # the puzzle is quoted as a bounded excerpt


def test_hard_tot_050_anot_rankings_with_huge_numbers_rank():
    assert parse_index_list("[" + DIGITS + ", 2]", 5) == [2]
    ranking = parse_ranking(f"best: {DIGITS}\n[{DIGITS}]", 3)
    assert ranking.indices == (1, 2, 3) and ranking.source == "order"
    assert parse_ranking("[3, 1]", 3).indices == (3, 1, 2)
    assert parse_index_list("[,]", 3) == [] and parse_index_list("[1, 2,]", 3) == [1, 2]


@pytest.mark.parametrize("logic", ["AND(" * 1000, f"AND({DIGITS})", "AND(1, " + "OR(" * 40 + "2" + ")" * 41])
def test_hard_tot_050_logic_is_a_syntax_error_never_a_crash(logic):
    with pytest.raises(LogicSyntaxError):
        parse_logic(logic)


def _plan(*atoms: dict) -> Plan:
    return Plan.model_validate({"atoms": list(atoms)})


def _codes(plan: Plan, **options) -> set[str]:
    with pytest.raises(PlanValidationError) as info:
        validate_plan(plan, TOOLS, **options)
    return {issue.code for issue in info.value.errors}


def test_hard_tot_060_aot_references_with_too_many_digits_are_plan_issues():
    reference = f"<result_of_{DIGITS}>"
    assert references({"a": reference}) == []
    plan = _plan({"id": 1, "kind": "tool", "name": "add", "input": {"a": reference, "b": 1}},
                 {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]})
    assert "bad_reference" in _codes(plan)
    with pytest.raises(KeyError):
        resolve(reference, {1: 1.0})


def test_hard_tot_060_aot_inputs_nested_too_deeply_are_plan_issues_and_references_are_iterative():
    deep: dict = {}
    node = deep
    for _ in range(5000):  # deeper than the interpreter's recursion limit
        node["x"] = {}
        node = node["x"]
    node["x"] = "<result_of_1>"
    assert references(deep) == [1]
    plan = _plan({"id": 1, "kind": "tool", "name": "add", "input": {"a": 1, "b": 2}},
                 {"id": 2, "kind": "tool", "name": "add", "input": {"a": [[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]], "b": 1},
                  "dependsOn": [1]},
                 {"id": 3, "kind": "final", "name": "report", "dependsOn": [2]})
    assert "input_too_deep" in _codes(plan)


def test_hard_tot_070_validate_plan_enforces_the_schemas_atom_limit():
    from llamabot.reasoning.aot.schema import MAX_ATOMS, plan_schema

    assert plan_schema(TOOLS)["properties"]["atoms"]["maxItems"] == MAX_ATOMS
    n = 1200
    chain = [{"id": i, "kind": "tool", "name": "add", "input": {"a": 1, "b": 1}, "dependsOn": [i + 1] if i < n else []}
             for i in range(1, n + 1)]
    plan = _plan(*chain, {"id": n + 1, "kind": "final", "name": "report", "dependsOn": [1]})
    with pytest.raises(PlanValidationError) as info:
        validate_plan(plan, TOOLS)
    assert [issue.code for issue in info.value.errors] == ["too_many_atoms"]  # one issue, not 1,200
    assert validate_plan(plan, TOOLS, max_atoms=None)[0].atoms[0].depends_on == [2]  # iterative cycle check


def test_hard_tot_080_aot_replans_after_a_plan_that_crashed_validation():
    bad = {"atoms": [{"id": 1, "kind": "tool", "name": "add", "input": {"a": f"<result_of_{DIGITS}>", "b": 1},
                      "dependsOn": []}, {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    good = {"atoms": [{"id": 1, "kind": "tool", "name": "add", "input": {"a": 1, "b": 2}, "dependsOn": []},
                      {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]}]}
    result = AoTBot(CALCULATOR_TOOLS, model=ScriptedModel([json_reply(bad), json_reply(good)]))("1 + 2?")
    assert result.answer == 3 and result.replans == 1
    assert any("names no atom" in error for error in result.plan_errors[0])

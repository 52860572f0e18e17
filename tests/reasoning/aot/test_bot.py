"""AoTBot with the scripted model: the plan prompt and schema, re-planning, errors, async twin, CLI, eval."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.graph.flow import DualNode
from llamabot.models.scripted import ScriptedModel, json_reply, text
from llamabot.models.scripted_provider import register_scripted_provider
from llamabot.reasoning.aot import AoTBot, AsyncAoTBot, AtomExecutionError, PlanValidationError
from llamabot.reasoning.aot.prompts import EXAMPLE_PLAN

QUESTION = "What is (15 + 7) * 3 - 10?"  # the numbers its plans write (AoT checks them)

GOOD = EXAMPLE_PLAN
BAD = {"atoms": [{"id": 1, "kind": "tool", "name": "sqrt", "input": {"x": 4}, "dependsOn": []}]}
DIVIDE_BY_ZERO = {"atoms": [
    {"id": 1, "kind": "tool", "name": "divide", "input": {"a": 1, "b": 0}, "dependsOn": []},
    {"id": 2, "kind": "final", "name": "report", "dependsOn": [1]},
]}


def test_aot_bot_010_the_graph_is_plan_then_execute_built_from_the_agents_node_kind():
    bot = AoTBot(expressions=False, model=ScriptedModel())
    assert isinstance(bot.plan_node, DualNode) and isinstance(bot.execute_node, DualNode)
    assert bot.plan_node.span_kind == "decision"  # the planner is a decision-kind node, as the agent's DecideNode
    assert bot.plan_node.successors == {"valid": bot.execute_node, "invalid": bot.plan_node}
    assert bot.execute_node.successors == {"layer": bot.execute_node, "done": bot.report_node,
                                           "failed": bot.compensate_node}
    for edge in ('-->|"invalid"|', '-->|"layer"|', '-->|"done"|', '-->|"failed"|'):
        assert edge in str(bot.to_mermaid())


def test_aot_bot_020_the_plan_prompt_explains_references_with_an_example_and_asks_for_the_schema():
    model = ScriptedModel([json_reply(GOOD)])
    result = AoTBot(expressions=False, model=model)("What is (15 + 7) * 3 - 10?")
    assert result.answer == 56 and result.replans == 0
    request = model.requests[0]
    prompt = request.messages[0]["content"]
    assert "<result_of_N>" in prompt and "Example." in prompt and "- multiply(a: number, b: number)" in prompt
    schema = request.response_format["json_schema"]["schema"]
    variants = schema["properties"]["atoms"]["items"]["anyOf"]
    assert {v["properties"]["name"]["const"] for v in variants} == {"add", "subtract", "multiply", "divide", "power", "report"}
    add_input = next(v for v in variants if v["properties"]["name"]["const"] == "add")["properties"]["input"]
    assert add_input["properties"]["a"]["anyOf"][1]["pattern"] == "^<result_of_[0-9]+>$"
    assert result.record.atoms[3].result == 56 and result.trace.of_kind("model_call")


def test_aot_bot_030_an_invalid_plan_is_sent_back_with_its_errors_and_replanned():
    model = ScriptedModel([json_reply(BAD), text("{not json"), json_reply(GOOD)])
    result = AoTBot(expressions=False, model=model)(QUESTION)
    assert result.answer == 56 and result.replans == 2 and result.parse_failures == 1
    assert "unknown tool 'sqrt'" in result.plan_errors[0][0]
    assert result.plan_errors[1][0].startswith("plan: ") and "Invalid JSON" in result.plan_errors[1][0]
    feedback = model.requests[1].messages[-1]["content"]
    assert feedback.startswith("That plan is invalid") and "sqrt" in feedback


def test_aot_bot_040_after_bounded_replans_a_typed_error_holds_the_plan_and_errors():
    model = ScriptedModel([json_reply(BAD)] * 3)
    with pytest.raises(PlanValidationError) as info:
        AoTBot(expressions=False, model=model, max_replans=2)(QUESTION)
    assert info.value.plan.atoms[0].name == "sqrt" and len(model.requests) == 3
    assert any(e.code == "unknown_tool" and e.atom == 1 for e in info.value.errors)


def test_aot_bot_050_execution_failures_raise_with_the_partial_record():
    with pytest.raises(AtomExecutionError) as info:
        AoTBot(expressions=False, model=ScriptedModel([json_reply(DIVIDE_BY_ZERO)]), max_execution_replans=0)("1/0")
    assert info.value.atom.id == 1 and info.value.record.failed_atom == 1 and info.value.earlier == ()


async def test_aot_bot_060_async_twin():
    result = await AsyncAoTBot(expressions=False, model=ScriptedModel([json_reply(GOOD)])).arun(QUESTION)
    assert result.answer == 56 and json.loads(json.dumps(result.to_dict(), default=str))["answer"] == 56


def test_aot_cli_010_save_then_replay_round_trips(tmp_path):
    name = register_scripted_provider(ScriptedModel([json_reply(GOOD)], name="aot-cli"), prefix="scripted-aot")
    saved = tmp_path / "plan.json"
    runner = CliRunner()
    first = runner.invoke(app, ["aot", "What is (15 + 7) * 3 - 10?", "--no-expressions", "--model", name, "--save", str(saved)],
                          env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert "answer: 56" in first.output and "subtract" in first.output
    again = runner.invoke(app, ["aot", "--replay", str(saved)], env={"COLUMNS": "200"})
    assert again.exit_code == 0 and "answer: 56" in again.output


def test_aot_cli_020_replay_accepts_a_bare_seed_plan_and_fails_non_zero_naming_the_atom(tmp_path):
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"atoms": [
        {"id": 1, "kind": "tool", "name": "add", "input": {"a": 15, "b": 7}},
        {"id": 2, "kind": "tool", "name": "multiply", "input": {"a": "<result_of_1>", "b": 3}},
        {"id": 3, "kind": "final", "name": "report", "dependsOn": [2]},
    ]}))
    runner = CliRunner()
    assert "answer: 66" in runner.invoke(app, ["aot", "--replay", str(seed)]).output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(BAD))
    invalid = runner.invoke(app, ["aot", "--replay", str(bad)])
    assert invalid.exit_code == 2 and "atom 1: unknown tool 'sqrt'" in invalid.output
    failing = tmp_path / "fail.json"
    failing.write_text(json.dumps(DIVIDE_BY_ZERO))
    failed = runner.invoke(app, ["aot", "--replay", str(failing)])
    assert failed.exit_code == 3 and "atom 1 (tool 'divide')" in failed.output


def test_aot_bot_070_executed_atoms_appear_in_the_trace_also_when_execution_fails():
    # Atom spans are tool calls now (category tool_call, kind atom), so their resolved inputs are under
    # "arguments", as for every tool call (FuncNode's spans, astream's tool_started events), no longer "inputs".
    result = AoTBot(expressions=False, model=ScriptedModel([json_reply(GOOD)]))(QUESTION)
    atoms = result.trace.of_kind("atom")
    assert [s.name for s in atoms] == ["1:add", "2:multiply", "3:subtract"]
    assert {s.category for s in atoms} == {"tool_call"}
    assert atoms[1].attributes["arguments"] == {"a": 22.0, "b": 3} and atoms[1].attributes["result"] == 66.0
    bot = AoTBot(expressions=False, model=ScriptedModel([json_reply(DIVIDE_BY_ZERO)]), max_execution_replans=0)
    with pytest.raises(AtomExecutionError):
        bot("1/0")
    [failed] = bot.last_trace.of_kind("atom")
    assert failed.error.startswith("ZeroDivisionError")


def test_aot_cli_030_replay_of_a_file_that_is_not_a_plan_fails_cleanly(tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text('{"atoms": [{"id": 1, "kind": "tool"}]}')
    result = CliRunner().invoke(app, ["aot", "--replay", str(junk)])
    assert result.exit_code == 2 and "not a plan" in result.output and "atoms.0.name" in result.output


def test_aot_cli_040_samples_and_execution_replans_reach_the_bot():
    # Both samples' first plans are drafted at once (both fail), then each sample re-plans once.
    name = register_scripted_provider(ScriptedModel([json_reply(DIVIDE_BY_ZERO)] * 2 + [json_reply(GOOD)] * 2,
                                                    name="aot-sc"), prefix="scripted-aot-sc")
    runner = CliRunner()
    result = runner.invoke(app, ["aot", QUESTION, "--no-expressions", "--model", name, "--samples", "2"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "failed plan, re-planned: atom 1 (tool 'divide')" in result.output and "answer: 56" in result.output
    assert "samples: 56, 56; 2 votes for the answer" in result.output
    refused = runner.invoke(app, ["aot", QUESTION, "--no-expressions", "--model", name, "--samples", "2", "--temperature", "0"])
    assert refused.exit_code == 2 and "needs temperature > 0" in refused.output

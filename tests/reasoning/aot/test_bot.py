"""AoTBot with the scripted model: the plan prompt and schema, re-planning, errors, async twin, CLI, eval."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.graph.flow import DualNode
from llamabot.models.scripted import ScriptedModel, json_reply, text
from llamabot.models.scripted_provider import register_scripted_provider
from llamabot.observe.provenance import git_commit, prompt_version, provenance, provenance_differences
from llamabot.reasoning.aot import AoTBot, AsyncAoTBot, AtomExecutionError, PlanValidationError
from llamabot.reasoning.aot.evaluate import (
    DIRECT_PROMPT,
    Problem,
    ResumeError,
    evaluate,
    is_correct,
    load_problems,
    parse_number,
    resumed_attempts,
    run_provenance,
)
from llamabot.reasoning.aot.prompts import EXAMPLE_PLAN

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
    result = AoTBot(expressions=False, model=model)("q")
    assert result.answer == 56 and result.replans == 2 and result.parse_failures == 1
    assert "unknown tool 'sqrt'" in result.plan_errors[0][0]
    assert result.plan_errors[1][0].startswith("plan: ") and "Invalid JSON" in result.plan_errors[1][0]
    feedback = model.requests[1].messages[-1]["content"]
    assert feedback.startswith("That plan is invalid") and "sqrt" in feedback


def test_aot_bot_040_after_bounded_replans_a_typed_error_holds_the_plan_and_errors():
    model = ScriptedModel([json_reply(BAD)] * 3)
    with pytest.raises(PlanValidationError) as info:
        AoTBot(expressions=False, model=model, max_replans=2)("q")
    assert info.value.plan.atoms[0].name == "sqrt" and len(model.requests) == 3
    assert any(e.code == "unknown_tool" and e.atom == 1 for e in info.value.errors)


def test_aot_bot_050_execution_failures_raise_with_the_partial_record():
    with pytest.raises(AtomExecutionError) as info:
        AoTBot(expressions=False, model=ScriptedModel([json_reply(DIVIDE_BY_ZERO)]), max_execution_replans=0)("1/0")
    assert info.value.atom.id == 1 and info.value.record.failed_atom == 1 and info.value.earlier == ()


async def test_aot_bot_060_async_twin():
    result = await AsyncAoTBot(expressions=False, model=ScriptedModel([json_reply(GOOD)])).arun("q")
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


def test_aot_eval_010_answers_are_scored_with_a_numeric_tolerance():
    assert parse_number("The answer is 1,234.5 apples") == 1234.5 and parse_number(42) == 42.0
    assert parse_number("no number") is None and parse_number(True) is None
    assert parse_number(r"so there are \(\boxed{12}\) left, not 13") == 12.0
    assert parse_number("Answer: 2\n(checked 3 times)") == 2.0
    assert is_correct(39.00001, 39.0) and not is_correct(38.9, 39.0) and not is_correct(None, 1.0)


def test_aot_eval_020_datasets_load(tmp_path):
    multi = tmp_path / "m.json"
    multi.write_text(json.dumps([{"iIndex": 7, "sQuestion": " Q? ", "lSolutions": [3.0]}]))
    svamp = tmp_path / "s.json"
    svamp.write_text(json.dumps([{"ID": "x", "Body": "B.", "Question": "Q?", "Answer": 2}]))
    arith = tmp_path / "a.csv"
    arith.write_text("idx,expression,answer\n0,1+2,3\n")
    assert load_problems("multiarith", multi)[0].question == "Q?"
    assert load_problems("svamp", svamp)[0].question == "B. Q?"
    assert load_problems("arith", arith)[0].answer == 3.0
    with pytest.raises(ValueError, match="unknown dataset"):
        load_problems("gsm8k", arith)


def test_aot_eval_030_the_harness_compares_aot_with_direct_answers_on_the_same_model():
    def responder(request):
        if request.response_format:  # the planner
            return json_reply(GOOD)
        return text("I think it is 55.")  # the direct baseline, wrong

    problems = load_problems("arith", _arith_file())
    summaries = evaluate(problems, ScriptedModel(responder=responder), methods=("aot", "direct", "cot"),
                         aot_options={"expressions": False})
    assert summaries["aot"].accuracy == 1.0 and summaries["aot"].plan_validity_rate == 1.0
    assert summaries["direct"].accuracy == 0.0 and summaries["direct"].attempts[0].predicted == 55.0
    assert summaries["aot"].mean_tokens > 0 and summaries["cot"].accuracy == 0.0
    with pytest.raises(ValueError, match="unknown methods"):
        evaluate(problems, ScriptedModel(), methods=("tot",))


def _arith_file():
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "a.csv"
    path.write_text("idx,expression,answer\n0,(15 + 7) * 3 - 10,56\n1,(15 + 7) * 3 - 10,56\n")
    return path


def test_aot_eval_040_eval_command_writes_a_report(tmp_path):
    def responder(request):
        return json_reply(GOOD) if request.response_format else text("56")

    name = register_scripted_provider(ScriptedModel(responder=responder, name="aot-eval"), prefix="scripted-aot-eval")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", "aot", str(_arith_file()), "--dataset", "arith", "--no-expressions", "--model", name,
                                      "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert {m: r["accuracy"] for m, r in report["methods"].items()} == {"aot": 1.0, "direct": 1.0, "cot": 1.0}
    assert "100.0% (2/2)" in result.output and report["partial"] is False


def _stopped_on_the_fourth_call(calls: list, name: str) -> ScriptedModel:
    """A model answering AoT's plan and the baselines, whose user presses Ctrl-C during its fourth call (the
    second problem's first method); ``calls`` records every request."""

    def responder(request):
        calls.append(request)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return json_reply(GOOD) if request.response_format else text("56")

    return ScriptedModel(responder=responder, name=name)


def test_aot_eval_045_an_interrupted_eval_keeps_the_attempts_it_finished_in_its_report(tmp_path):
    calls: list = []
    name = register_scripted_provider(_stopped_on_the_fourth_call(calls, "aot-ctrl-c"), prefix="scripted-aot-ctrl-c")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", "aot", str(_arith_file()), "--dataset", "arith", "--no-expressions",
                                      "--model", name, "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 130  # interrupted
    report = json.loads(out.read_text())
    assert report["partial"] is True and report["provenance"]["model"] == name
    assert {m: r["total"] for m, r in report["methods"].items()} == {"aot": 1, "direct": 1, "cot": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left


def test_aot_eval_047_resume_keeps_the_finished_attempts_runs_only_the_rest_and_refuses_another_setup(tmp_path):
    calls: list = []
    name = register_scripted_provider(_stopped_on_the_fourth_call(calls, "aot-resume"), prefix="scripted-aot-resume")
    out = tmp_path / "report.json"
    command = ["eval", "aot", str(_arith_file()), "--dataset", "arith", "--no-expressions", "--model", name,
               "--out", str(out)]
    assert CliRunner().invoke(app, command, env={"COLUMNS": "200"}).exit_code == 130
    interrupted = json.loads(out.read_text())
    result = CliRunner().invoke(app, [*command, "--resume"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "3 attempts kept" in result.output and len(calls) == 7  # problem 0 kept; problem 1's three methods run
    report = json.loads(out.read_text())
    assert report["partial"] is False and report["tolerance"] == 1e-4
    assert {m: [a["problem"] for a in r["attempts"]] for m, r in report["methods"].items()} == {
        m: ["0", "1"] for m in ("aot", "direct", "cot")}
    assert {m: r["correct"] for m, r in report["methods"].items()} == {"aot": 2, "direct": 2, "cot": 2}
    first = interrupted["provenance"]
    assert report["provenance"]["resumed_from"] == [{k: first[k] for k in ("commit", "created", "llamabot", "python")}]
    # Made differently (another tolerance, another AoT setting): refused before any call, naming the difference.
    for extra, difference in ((["--tolerance", "0.01"], "tolerance: 0.0001 != 0.01"), (["--samples", "2"], "samples")):
        result = CliRunner().invoke(app, [*command, "--resume", *extra], env={"COLUMNS": "200"})
        assert result.exit_code == 2 and difference in result.output and "attempts kept" not in result.output
    assert len(calls) == 7


def test_aot_eval_047_resumed_attempts_names_an_unreadable_attempt():
    problems = [Problem("0", "q", 1.0)]
    now = run_provenance("m", ("direct",))
    previous = {"dataset": "arith", "tolerance": 1e-4, "provenance": dict(now),
                "methods": {"direct": {"attempts": [{"problem": "0", "gold": 1.0}]}}}
    with pytest.raises(ResumeError, match="cannot be read"):
        resumed_attempts(previous, dict(now), problems, ("direct",), dataset="arith", tolerance=1e-4)
    kept = {**previous, "methods": {"direct": {"attempts": [
        {"problem": "0", "gold": 1.0, "predicted": 1.0, "correct": True, "latency_s": 0.1, "tokens": 3},
        {"problem": "7", "gold": 2.0, "predicted": 2.0, "correct": True, "latency_s": 0.1, "tokens": 3}]}}}
    got = resumed_attempts(kept, dict(now), problems, ("direct",), dataset="arith", tolerance=1e-4)
    assert list(got["direct"]) == ["0"]  # only the problems asked for


def test_aot_bot_070_executed_atoms_appear_in_the_trace_also_when_execution_fails():
    # Atom spans are tool calls now (category tool_call, kind atom), so their resolved inputs are under
    # "arguments", as for every tool call (FuncNode's spans, astream's tool_started events), no longer "inputs".
    result = AoTBot(expressions=False, model=ScriptedModel([json_reply(GOOD)]))("q")
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


def test_aot_eval_020_headerless_arith_csv_loads(tmp_path):
    arith = tmp_path / "a.csv"
    arith.write_text("0,5*5/5*4+8-8+3*9,47.0\n1,8-8+2,2\n")
    problems = load_problems("arith", arith)
    assert [p.answer for p in problems] == [47.0, 2.0] and problems[0].question == "What is 5*5/5*4+8-8+3*9?"


def test_aot_eval_050_the_report_records_the_commit_the_evaluation_started_on(tmp_path, monkeypatch):
    """A long evaluation outlives commits made meanwhile: its report names the code that ran, not the code of
    the moment it was written."""
    import llamabot.observe.provenance as prov

    calls = []

    def responder(request):
        calls.append(request)
        return json_reply(GOOD) if request.response_format else text("56")

    monkeypatch.setattr(prov, "git_commit", lambda where=None: f"commit-after-{len(calls)}-calls")
    name = register_scripted_provider(ScriptedModel(responder=responder, name="aot-prov-start"),
                                      prefix="scripted-aot-prov-start")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", "aot", str(_arith_file()), "--dataset", "arith", "--no-expressions", "--model", name,
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert calls and json.loads(out.read_text())["provenance"]["commit"] == "commit-after-0-calls"


def test_aot_eval_050_the_report_records_model_settings_prompt_versions_and_commit(tmp_path):
    def responder(request):
        return json_reply(GOOD) if request.response_format else text("56")

    name = register_scripted_provider(ScriptedModel(responder=responder, name="aot-prov"), prefix="scripted-aot-prov")
    reports = []
    for samples in (1, 3):
        out = tmp_path / f"report{samples}.json"
        result = CliRunner().invoke(app, ["eval", "aot", str(_arith_file()), "--dataset", "arith", "--no-expressions", "--model", name,
                                          "--out", str(out), "--samples", str(samples)])
        assert result.exit_code == 0, result.output
        reports.append(json.loads(out.read_text())["provenance"])
    first, second = reports
    assert first["model"] == name
    assert first["decoding"]["aot"] == {"max_replans": 2, "max_execution_replans": 1, "samples": 1, "subquestions": False,
                                       "expressions": False}
    assert first["decoding"]["direct"] == {"max_tokens": 32} and first["decoding"]["cot"] == {"max_tokens": 384}
    assert set(first["prompts"]) == {"aot", "direct", "cot"} and all(len(h) == 64 for h in first["prompts"].values())
    assert first["prompts"]["direct"] == prompt_version([DIRECT_PROMPT])
    assert first["commit"] == git_commit() and first["commit"] != ""
    assert provenance_differences(first, second) == ["decoding.aot.samples: 1 != 3"]


def test_aot_eval_050_prompt_versions_change_with_the_text_and_the_commit_is_unknown_outside_git(tmp_path):
    assert prompt_version("a") == prompt_version(["a"]) != prompt_version("b")
    assert prompt_version(["ab", "c"]) != prompt_version(["a", "bc"])  # the split between texts counts too
    assert git_commit(tmp_path) == "unknown"
    with pytest.raises(ValueError, match="needs the model's name"):
        provenance("", {}, {})


def test_aot_cli_040_samples_and_execution_replans_reach_the_bot():
    name = register_scripted_provider(ScriptedModel([json_reply(DIVIDE_BY_ZERO), json_reply(GOOD)] * 2,
                                                    name="aot-sc"), prefix="scripted-aot-sc")
    runner = CliRunner()
    result = runner.invoke(app, ["aot", "q", "--no-expressions", "--model", name, "--samples", "2"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "failed plan, re-planned: atom 1 (tool 'divide')" in result.output and "answer: 56" in result.output
    assert "samples: 56, 56; 2 votes for the answer" in result.output
    refused = runner.invoke(app, ["aot", "q", "--no-expressions", "--model", name, "--samples", "2", "--temperature", "0"])
    assert refused.exit_code == 2 and "needs temperature > 0" in refused.output

"""The AoT evaluation harness (AOT-EVAL-*): answers scored with a numeric tolerance, the datasets, AoT against
the direct and CoT answers of the same model, ``llamabot eval aot`` and its report, resume and provenance."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.evals.aot import (
    DIRECT_PROMPT,
    Problem,
    ResumeError,
    evaluate,
    load_problems,
    resumed_attempts,
    run_provenance,
)
from llamabot.evals.provenance import git_commit, prompt_version, provenance, provenance_differences
from llamabot.evals.scorers import is_correct, parse_number, rounded_places
from llamabot.models.scripted import ScriptedModel, json_reply, text
from llamabot.models.scripted_provider import register_scripted_provider
from llamabot.reasoning.aot.prompts import EXAMPLE_PLAN

GOOD = EXAMPLE_PLAN


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


def test_aot_eval_020_headerless_arith_csv_loads(tmp_path):
    arith = tmp_path / "a.csv"
    arith.write_text("0,5*5/5*4+8-8+3*9,47.0\n1,8-8+2,2\n")
    problems = load_problems("arith", arith)
    assert [p.answer for p in problems] == [47.0, 2.0] and problems[0].question == "What is 5*5/5*4+8-8+3*9?"


def test_aot_eval_050_the_report_records_the_commit_the_evaluation_started_on(tmp_path, monkeypatch):
    """A long evaluation outlives commits made meanwhile: its report names the code that ran, not the code of
    the moment it was written."""
    import llamabot.evals.provenance as prov

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
                                       "reasoning": True, "expressions": False}
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


def test_aot_eval_060_a_rounded_gold_is_matched_at_its_precision(tmp_path):
    assert rounded_places("-3.93") == 2 and rounded_places("21.833") == 3
    assert rounded_places("28") is rounded_places("87.5") is rounded_places("47.0") is None
    data = tmp_path / "arith.csv"
    data.write_text("0,1/3+1,1.33\n1,1/2+3,3.5\n")
    rounded, exact = load_problems("arith", data)
    assert rounded.places == 2 and exact.places is None
    assert rounded.is_correct(4 / 3) and rounded.is_correct(1.33) and not rounded.is_correct(1.34)
    assert exact.is_correct(3.5) and not exact.is_correct(3.46)  # an exact gold keeps the strict tolerance
    assert not is_correct(None, 1.33, places=2)

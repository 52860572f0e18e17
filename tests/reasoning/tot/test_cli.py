"""``llamabot tot`` and ``llamabot eval tot``, through LiteLLM with a scripted provider (TOT-CLI-*)."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from llamabot.cli import app
from llamabot.evals.tot import GAME24_TOT_OPTIONS
from llamabot.models.scripted import ScriptedModel, json_reply
from llamabot.models.scripted_provider import register_scripted_provider
from tests.reasoning.tot.helpers import game24_oracle, oracle_model

ENV = {"COLUMNS": "200"}


def test_tot_cli_010_tot_prints_the_tree_the_best_solution_and_its_check():
    model = oracle_model(name="tot-cli")
    name = register_scripted_provider(model, prefix="scripted-tot-cli")
    result = CliRunner().invoke(app, ["tot", "4 9 10 13", "--model", name, "--no-stream", "--mermaid"], env=ENV)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "problem: 4 9 10 13" in out and "★" in out and "[1.00]" in out  # the tree, scores, solution path
    assert "termination: threshold" in out
    assert "best solution: (10 - 4) * (13 - 9)  check: correct" in out
    assert "flowchart TD" in out and "classDef solution" in out
    kinds = [r.response_format["json_schema"]["name"] for r in model.requests]  # reached via LiteLLM
    # The game's defaults: free proposals from four numbers, then, with branching 6, two steps per pair.
    assert kinds[0] == "tot_thoughts" and "tot_pair_steps" in kinds


def test_tot_cli_020_a_wrong_best_solution_is_reported_as_wrong():
    def confident_but_wrong(request):
        if request.response_format["json_schema"]["name"] == "tot_thoughts":
            return json_reply({"thoughts": ["13 + 9 = 22", "10 + 4 = 14"]})
        ids = request.response_format["json_schema"]["schema"]["properties"]["scores"]["required"]
        return json_reply({"scores": {i: 1.0 for i in ids}})

    name = register_scripted_provider(ScriptedModel(responder=confident_but_wrong, name="wrong"),
                                      prefix="scripted-tot-wrong")
    result = CliRunner().invoke(app, ["tot", "4 9 10 13", "--model", name, "--no-stream", "-b", "2"], env=ENV)
    assert result.exit_code == 0, result.output
    assert "check: wrong" in result.output or "check: no complete expression" in result.output


def test_tot_cli_025_game_steps_show_the_numbers_the_game_computed_not_the_models_notes():
    def wrong_notes(request):
        if request.response_format["json_schema"]["name"] == "tot_thoughts":
            return json_reply({"thoughts": ["12 / 12 = 1 (left: 7 13 144)", "13 - 7 = 6 (left: 6 12 99)"]})
        ids = request.response_format["json_schema"]["schema"]["properties"]["scores"]["required"]
        return json_reply({"scores": {i: 0.5 for i in ids}})

    name = register_scripted_provider(ScriptedModel(responder=wrong_notes, name="notes"), prefix="scripted-tot-notes")
    result = CliRunner().invoke(app, ["tot", "7 12 12 13", "--model", name, "--no-stream", "-b", "2", "-d", "1"],
                                env=ENV)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "12 / 12 = 1 (left: 7 13 1)" in out and "13 - 7 = 6 (left: 12 12 6)" in out  # tree and best path
    assert "7 13 144" not in out and "6 12 99" not in out


def test_tot_cli_030_bad_input_is_rejected_with_a_clear_message():
    runner = CliRunner()
    bad_puzzle = runner.invoke(app, ["tot", "four nine ten"], env=ENV)
    assert bad_puzzle.exit_code == 2 and "whole numbers" in bad_puzzle.output
    bad_game = runner.invoke(app, ["tot", "1 2 3 4", "--game", "chess"], env=ENV)
    assert bad_game.exit_code == 2 and "game24 or none" in bad_game.output


def test_tot_cli_040_eval_reports_success_nodes_tokens_and_time_for_tot_io_and_cot(tmp_path):
    model = ScriptedModel(responder=game24_oracle, name="tot-eval")
    name = register_scripted_provider(model, prefix="scripted-tot-eval")
    dataset = tmp_path / "puzzles.csv"
    dataset.write_text("Rank,Puzzles\n1,4 9 10 13\n2,1 1 4 6\n3,1 1 11 11\n")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        # --prefer-deeper: the oracle scores every step that keeps a puzzle solvable 1, and with its many ties the
        # default search (5 proposals, 30 nodes) goes wide and runs out of nodes on 1 1 4 6 (TOT-SEARCH-035).
        app, ["eval", "tot", "--dataset", "game24", str(dataset), "--limit", "2", "--model", name, "--out", str(out),
              "--prefer-deeper"],
        env=ENV,
    )
    assert result.exit_code == 0, result.output
    assert "Game of 24 · 2 puzzles" in result.output and "6/6" in result.output  # the progress bar's count
    report = json.loads(out.read_text())
    summary = {s["method"]: s for s in report["summary"]}
    assert list(summary) == ["io", "cot", "tot"]
    assert summary["tot"]["success_rate"] == 1.0 and summary["io"]["success_rate"] == 0.0
    assert summary["tot"]["mean_nodes"] > 1 and summary["tot"]["total_tokens"] > summary["io"]["total_tokens"]
    assert all(s["total_seconds"] >= 0 for s in summary.values())
    assert report["config"]["tot_options"]["min_depth"] == 3 and report["model"] == name
    options = report["config"]["tot_options"]  # TOT-EVAL-040: calls and nodes, not seconds, by default
    assert options["max_model_calls"] == 14 and options["max_nodes"] == 45 and options["max_duration_ms"] is None
    assert {k: options[k] for k in GAME24_TOT_OPTIONS} == dict(GAME24_TOT_OPTIONS)  # the CLI's defaults are these
    assert options["prefer_deeper"] is True and options["branching_factor"] == 6
    assert report["config"]["pair_steps"] is True and report["config"]["last_results"] is True
    assert report["provenance"]["model"] == name and set(report["provenance"]["prompts"]) == {"io", "cot", "tot"}
    assert [a["puzzle"] for a in report["attempts"]] == ["4 9 10 13"] * 3 + ["1 1 4 6"] * 3


def test_tot_cli_045_an_interrupted_eval_keeps_the_attempts_it_finished_and_resume_runs_only_the_rest(tmp_path):
    calls = []

    def stopped_on_the_third_call(request):
        calls.append(request)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the user presses Ctrl-C during the third puzzle
        return game24_oracle(request)

    name = register_scripted_provider(ScriptedModel(responder=stopped_on_the_third_call, name="ctrl-c"),
                                      prefix="scripted-tot-ctrl-c")
    dataset = tmp_path / "puzzles.csv"
    dataset.write_text("Rank,Puzzles\n1,4 9 10 13\n2,1 1 4 6\n3,1 1 11 11\n")
    out = tmp_path / "report.json"
    command = ["eval", "tot", str(dataset), "--methods", "io", "--model", name, "--out", str(out)]
    result = CliRunner().invoke(app, command, env=ENV)
    assert result.exit_code == 130  # interrupted
    report = json.loads(out.read_text())
    assert report["partial"] is True and [a["puzzle"] for a in report["attempts"]] == ["4 9 10 13", "1 1 4 6"]
    assert report["summary"][0]["puzzles"] == 2 and report["provenance"]["model"] == name
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    # --resume goes on from there: only the third puzzle runs, and the report is whole.
    result = CliRunner().invoke(app, [*command, "--resume"], env=ENV)
    assert result.exit_code == 0, result.output
    assert "2 attempts kept" in result.output and len(calls) == 4
    resumed = json.loads(out.read_text())
    assert resumed["partial"] is False
    assert [a["puzzle"] for a in resumed["attempts"]] == ["4 9 10 13", "1 1 4 6", "1 1 11 11"]
    # Not the same evaluation (another model, other options): refused, naming what differs; no --out: refused.
    other = register_scripted_provider(ScriptedModel(responder=game24_oracle, name="other"), prefix="scripted-tot-other")
    result = CliRunner().invoke(app, [*command[:-4], "--model", other, "--out", str(out), "--resume", "-b", "5"], env=ENV)
    assert result.exit_code == 2 and "model" in result.output and "branching_factor: 6 != 5" in result.output
    assert "attempts kept" not in result.output  # said only of a report that passed its checks
    result = CliRunner().invoke(app, ["eval", "tot", str(dataset), "--resume"], env=ENV)
    assert result.exit_code == 2 and "--out" in result.output


def test_tot_cli_050_eval_rejects_an_unreadable_dataset_naming_the_line(tmp_path):
    dataset = tmp_path / "bad.txt"
    dataset.write_text("4 9 10 13\nnot a puzzle\n")
    result = CliRunner().invoke(app, ["eval", "tot", "--dataset", "game24", str(dataset)], env=ENV)
    assert result.exit_code == 2 and "line 2" in result.output
    other = CliRunner().invoke(app, ["eval", "tot", "--dataset", "svamp", str(dataset)], env=ENV)
    assert other.exit_code == 2 and "game24" in other.output


def test_tot_cli_060_the_commands_are_registered_without_importing_litellm():
    code = (
        "import sys\nfrom typer.testing import CliRunner\nfrom llamabot.cli import app\n"
        "r = CliRunner().invoke(app, ['tot', '--help'])\nassert r.exit_code == 0 and 'Tree-of-Thoughts' in r.output\n"
        "r = CliRunner().invoke(app, ['eval', 'tot', '--help'])\nassert r.exit_code == 0 and 'baselines' in r.output\n"
        "print(sorted(m for m in ('litellm', 'llama_cpp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_tot_cli_070_parallel_and_brief_reach_the_search_and_the_prompts(tmp_path):
    """TOT-CLI-070: ``--parallel N`` sets the waves' width and ``--brief`` the rules-only system prompt, in
    ``llamabot tot`` and in ``llamabot eval tot`` (recorded in the report)."""
    from llamabot.evals.game24.prompts import GAME24_BRIEF_SYSTEM, GAME24_SYSTEM

    model = oracle_model(name="tot-cli-parallel")
    name = register_scripted_provider(model, prefix="scripted-tot-cli-parallel")
    result = CliRunner().invoke(app, ["tot", "4 9 10 13", "--model", name, "--no-stream", "--parallel", "2",
                                      "--no-finish-steps"], env=ENV)
    assert result.exit_code == 0 and "check: correct" in result.output, result.output
    assert {r.messages[0]["content"] for r in model.requests} == {GAME24_SYSTEM}  # the full prompt by default
    dataset = tmp_path / "puzzles.csv"
    dataset.write_text("Rank,Puzzles\n1,4 9 10 13\n")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", "tot", str(dataset), "--methods", "tot", "--model", name, "--out",
                                      str(out), "--parallel", "3", "--brief", "--no-finish-steps"], env=ENV)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["config"]["tot_options"]["parallel_expansions"] == 3 and report["attempts"][0]["solved"]
    assert report["config"]["brief"] is True and report["config"]["finish_steps"] is False
    assert model.requests[-1].messages[0]["content"] == GAME24_BRIEF_SYSTEM
    bad = CliRunner().invoke(app, ["tot", "4 9 10 13", "--model", name, "--parallel", "0"], env=ENV)
    assert bad.exit_code == 2 and "parallel" in bad.output

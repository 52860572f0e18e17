"""The Game-of-24 evaluation harness: datasets, methods and the report (TOT-EVAL-*)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from llamabot.evals.game24.prompts import Game24Prompts
from llamabot.evals.provenance import git_commit, prompt_version
from llamabot.evals.tot import (
    GAME24_TOT_OPTIONS,
    DatasetError,
    ResumeError,
    evaluate_game24,
    load_game24,
    run_baseline,
)
from llamabot.models.scripted import ScriptedModel
from tests.reasoning.tot.helpers import game24_oracle

DEV = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "game24_dev.csv"


def test_tot_eval_010_datasets_load_from_the_papers_csv_or_plain_lines(tmp_path):
    csv_file = tmp_path / "24.csv"
    csv_file.write_text("Rank,Puzzles,AMT (s)\n1,1 1 4 6,4.4\n2,1 1 11 11,4.41\n3,1 1 3 8,4.45\n")
    assert load_game24(csv_file) == ["1 1 4 6", "1 1 11 11", "1 1 3 8"]
    assert load_game24(csv_file, limit=2) == ["1 1 4 6", "1 1 11 11"]
    lines = tmp_path / "puzzles.txt"
    lines.write_text("4 9 10 13\n\n1 2 3 4\n")
    assert load_game24(lines) == ["4 9 10 13", "1 2 3 4"]
    if DEV.exists():
        assert len(load_game24(DEV)) == 30 and load_game24(DEV, 1) == ["1 1 4 6"]


def test_tot_eval_010_an_unreadable_dataset_raises_dataset_error_naming_file_and_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("Rank,Puzzles\n1,1 1 4 6\n2,one two\n")
    with pytest.raises(DatasetError, match=r"bad\.csv, line 3"):
        load_game24(bad)
    with pytest.raises(DatasetError, match="cannot read"):
        load_game24(tmp_path / "missing.csv")
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(DatasetError, match="no puzzles"):
        load_game24(tmp_path / "empty.txt")


def test_tot_eval_020_baselines_make_one_call_and_are_judged_by_the_checker():
    model = ScriptedModel(["Answer: (13 - 9) * (10 - 4) = 24", "4 + 9 = 13\nno answer", ConnectionError("down")])
    right = run_baseline(model, "io", "4 9 10 13")
    wrong = run_baseline(model, "cot", "4 9 10 13")
    failed = run_baseline(model, "io", "4 9 10 13")
    assert right.solved and right.answer == "(13 - 9) * (10 - 4) = 24" and right.model_calls == 1 and right.nodes == 1
    assert not wrong.solved and wrong.answer is None
    assert not failed.solved and "ConnectionError" in failed.error
    assert model.requests[0].messages[0]["content"].startswith("Use numbers and basic arithmetic")
    assert "Steps:" in model.requests[1].messages[0]["content"] and model.requests[1].last_user_text == "Input: 4 9 10 13"


def test_tot_eval_030_the_report_compares_the_methods_on_the_same_model():
    model = ScriptedModel(responder=game24_oracle)
    seen = []
    # prefer_deeper: the oracle's many tied scores would send the default search wide (TOT-SEARCH-035).
    report = evaluate_game24(["4 9 10 13", "1 1 4 6"], model, on_attempt=seen.append,
                             tot_options={"prefer_deeper": True}, max_tokens=64)
    assert [(a.puzzle, a.method) for a in seen] == [
        ("4 9 10 13", "io"), ("4 9 10 13", "cot"), ("4 9 10 13", "tot"),
        ("1 1 4 6", "io"), ("1 1 4 6", "cot"), ("1 1 4 6", "tot"),
    ]
    summary = {s.method: s for s in report.summaries()}
    assert summary["tot"].success_rate == 1.0 and summary["tot"].solution_in_tree_rate == 1.0
    assert summary["io"].success_rate == 0.0 and summary["io"].solution_in_tree_rate is None
    assert summary["tot"].model_calls > summary["cot"].model_calls == 2
    assert all(r.params == {"max_tokens": 64} for r in model.requests)
    data = report.to_dict()
    assert data["config"]["tot_options"] == {**GAME24_TOT_OPTIONS, "prefer_deeper": True}
    assert data["config"]["verify"] is False and data["config"]["tries"] is False
    assert len(data["attempts"]) == 6 and data["summary"][2]["method"] == "tot"
    with pytest.raises(ValueError, match="unknown method"):
        evaluate_game24(["1 1 4 6"], model, methods=["tot", "magic"])


def test_tot_eval_050_the_report_records_model_decoding_prompt_versions_and_commit():
    model = ScriptedModel(responder=game24_oracle)
    report = evaluate_game24(["4 9 10 13"], model, methods=["io", "tot"], max_tokens=64).to_dict()
    provenance = report["provenance"]
    assert provenance["model"] == "scripted" and provenance["commit"] == git_commit()
    assert provenance["decoding"] == {"io": {"max_tokens": 64}, "tot": {"max_tokens": 64}}
    assert provenance["prompts"]["tot"] == prompt_version(Game24Prompts().prompt_texts())
    assert set(provenance["prompts"]) == {"io", "tot"} and provenance["prompts"]["io"] != provenance["prompts"]["tot"]
    changed = replace(Game24Prompts(), evaluation_prompt="Score the steps.")
    assert prompt_version(changed.prompt_texts()) != provenance["prompts"]["tot"]


def test_tot_eval_060_the_report_is_checkpointed_after_every_attempt_and_says_when_it_is_partial():
    snapshots = []
    report = evaluate_game24(["4 9 10 13", "1 1 4 6"], ScriptedModel(responder=game24_oracle), methods=["io", "cot"],
                             checkpoint=lambda r: snapshots.append(r.to_dict()))
    assert [len(s["attempts"]) for s in snapshots] == [1, 2, 3, 4]
    assert [s["partial"] for s in snapshots] == [True, True, True, False] and not report.partial
    assert snapshots[1]["summary"][1] == {**snapshots[1]["summary"][1], "method": "cot", "puzzles": 1}
    assert snapshots[-1]["provenance"] == snapshots[0]["provenance"] == report.provenance


def test_tot_eval_070_a_resumed_run_keeps_the_attempts_of_the_report_and_runs_only_the_rest():
    puzzles = ["4 9 10 13", "1 1 4 6", "1 1 11 11"]
    first = evaluate_game24(puzzles[:2], ScriptedModel(responder=game24_oracle), methods=["io", "cot"]).to_dict()
    model = ScriptedModel(responder=game24_oracle)
    report = evaluate_game24(puzzles, model, methods=["io", "cot"], resume=first)
    assert len(model.requests) == 2  # only the third puzzle ran, once per method
    assert [(a.puzzle, a.method) for a in report.attempts] == [(p, m) for p in puzzles for m in ("io", "cot")]
    assert not report.partial and report.config["puzzles"] == 3
    assert report.provenance["resumed_from"] == [{k: first["provenance"][k] for k in
                                                  ("commit", "created", "llamabot", "python")}]
    # Resuming a resumed report keeps the chain; an attempt of a puzzle no longer asked for is dropped.
    again = evaluate_game24(puzzles[1:], ScriptedModel(responder=game24_oracle), methods=["io", "cot"],
                            resume=report.to_dict())
    assert [a.puzzle for a in again.attempts] == ["1 1 4 6"] * 2 + ["1 1 11 11"] * 2
    assert len(again.provenance["resumed_from"]) == 2


def test_tot_eval_070_a_report_made_differently_is_not_resumed_and_the_error_names_each_difference():
    first = evaluate_game24(["4 9 10 13"], ScriptedModel(responder=game24_oracle), methods=["io", "tot"],
                            max_tokens=64).to_dict()
    model = ScriptedModel(responder=game24_oracle)
    with pytest.raises(ResumeError) as caught:
        evaluate_game24(["4 9 10 13", "1 1 4 6"], model, methods=["io", "tot"], max_tokens=128,
                        tot_options={"branching_factor": 5}, prompts=Game24Prompts(pair_steps=False), resume=first)
    message = str(caught.value)
    assert "decoding.tot.max_tokens: 64 != 128" in message and "prompts.tot" in message
    assert "config.tot_options.branching_factor: 6 != 5" in message and "config.pair_steps: True != False" in message
    assert model.requests == []  # nothing ran
    with pytest.raises(ResumeError, match="cannot be read"):
        evaluate_game24(["4 9 10 13"], model, methods=["io", "tot"], max_tokens=64,
                        resume={**first, "attempts": [{"puzzle": "4 9 10 13", "method": "io"}]})

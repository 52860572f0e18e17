"""The CoT baseline (ANOT-COT-*), the evaluation harness (ANOT-EVAL-*) and ``llamabot anot`` (ANOT-CLI-*)."""

from __future__ import annotations

import json
import threading

import pytest
from typer.testing import CliRunner

from llamabot import ScriptedModel
from llamabot.cli import app
from llamabot.evals.anot import CoTBot, evaluate, load_dataset
from llamabot.evals.anot.cot import approx_tokens
from llamabot.evals.provenance import git_commit, prompt_version
from llamabot.models.reply import ModelRequest
from llamabot.models.scripted import text
from llamabot.reasoning.anot.bot import ANoTBot
from tests.reasoning.anot.helpers import FIXTURE_DATA, ITEMS, MODEL_STRATEGY, phase, three_phase_responder


def test_anot_cot_010_all_items_go_into_one_prompt_under_the_token_budget():
    dataset = load_dataset(FIXTURE_DATA)
    items = list(dataset.items[:10])
    model = ScriptedModel([text("Item 3 has everything.\n[3, 1, 2]")])
    bot = CoTBot(model=model, token_budget=2000, debug=0)
    result = bot("a quiet cafe", items)
    prompt = model.requests[0].last_user_text
    assert all(f"[{n}] name: " in prompt for n in range(1, 11))
    assert approx_tokens(prompt) <= 2000 + 200  # the budget plus the request and instructions
    assert result.ranking.parsed == (3, 1, 2) and result.ranking.indices[:3] == (3, 1, 2)
    assert result.stats["CoT"].calls == 1 and result.totals.prompt_tokens > 0
    bigger = CoTBot(model=ScriptedModel(), token_budget=8000).prompt("q", items)
    assert len(bigger) > len(prompt)  # more budget, more review text


def test_anot_cot_020_an_unparseable_answer_falls_back_to_item_order():
    result = CoTBot(model=ScriptedModel([text("I cannot tell.")]), debug=0)("q", ITEMS)
    assert result.ranking.source == "order" and result.ranking.indices == (1, 2, 3)


def eval_responder(request: ModelRequest):
    if request.messages[0]["content"].startswith("You rank items"):
        return text("[2, 1]")
    return three_phase_responder(final="[2, 1]", condition="[2]", strategy=MODEL_STRATEGY)(request)


@pytest.mark.parametrize("method", ["anot", "cot"])
def test_anot_eval_010_both_methods_run_through_the_same_harness(method):
    dataset = load_dataset(FIXTURE_DATA)
    seen = []
    report = evaluate(dataset, method, ScriptedModel(responder=eval_responder), limit=3, candidates=4, seed=7,
                      debug=0, on_record=seen.append)
    chosen = evaluate(dataset, method, ScriptedModel(responder=eval_responder), request_ids=["R81", "R01"], debug=0)
    assert [r.request_id for r in chosen.records] == ["R81", "R01"]
    assert [r.request_id for r in report.records] == ["R01", "R11", "R41"] and len(seen) == 3
    for record in report.records:
        assert len(record.candidates) == 4 and record.candidates[record.gold_position - 1] == record.gold_idx
        assert record.ranking[:2] == [2, 1] and record.ranking_idx[0] == record.candidates[1]
        assert record.prompt_tokens > 0 and record.calls >= 1 and record.seconds >= 0
    summary = report.summary()
    expected_hit1 = sum(r.gold_position == 2 for r in report.records) / 3
    assert summary["hits@1"] == pytest.approx(expected_hit1) and summary["n"] == 3
    assert set(summary["phases_per_request"]) == ({"P1", "P2", "P3"} if method == "anot" else {"CoT"})
    assert ("final_hits@1" in summary and "scores_hits@1" in summary) == (method == "anot")
    document = json.loads(json.dumps(report.to_dict(), default=str))
    assert document["records"][0]["phases"] and document["summary"]["prompt_tokens_per_request"] > 0


def test_anot_eval_020_a_failing_request_is_recorded_and_the_evaluation_goes_on():
    dataset = load_dataset(FIXTURE_DATA)
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("provider down")
        return text("[1]")

    report = evaluate(dataset, "cot", ScriptedModel(responder=flaky), limit=2, candidates=3, debug=0)
    first, second = report.records
    assert first.failed == "ConnectionError: provider down" and first.ranking == [] and not first.hit(5)
    assert second.failed is None and second.ranking[0] == 1
    assert report.summary()["failed_requests"] == 1
    with pytest.raises(ValueError, match="unknown method 'tot'"):
        evaluate(dataset, "tot", ScriptedModel())


def test_anot_cli_010_anot_command_evaluates_both_methods_and_writes_the_report(tmp_path):
    """ANOT-CLI-010, and ANOT-EVAL-030: the report records each method's provenance."""
    from llamabot.models.scripted_provider import register_scripted_provider

    name = register_scripted_provider(ScriptedModel(responder=eval_responder, name="anot-cli"), prefix="scripted-anot")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        ["anot", "--data", str(FIXTURE_DATA), "--limit", "2", "--candidates", "4", "--method", "both",
         "--model", name, "--out", str(out), "--debug", "1", "--seed", "3", "--rank-by", "scores"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "anot on philly_cafes_mini (4 candidates" in result.output and "cot on philly_cafes_mini" in result.output
    assert "Summary (means per request)" in result.output and "Hits@1" in result.output
    assert "anot (logic scores)" in result.output and "anot (final step)" in result.output
    assert "[P1:R00] Planning for:" in result.output and "[CoT:R01] Final ranking:" in result.output
    document = json.loads(out.read_text())
    assert "partial" not in document
    assert set(document["reports"]) == {"anot", "cot"} and document["config"]["seed"] == 3
    assert document["config"]["rank_by"] == "scores"
    assert document["token_ratio"] > 0
    provenance = document["provenance"]  # ANOT-EVAL-030: how each method's report was made
    assert set(provenance) == {"anot", "cot"} and provenance["anot"]["model"] == name
    assert provenance["anot"]["decoding"]["anot"]["phase3"]["max_tokens"] == 128
    assert provenance["anot"]["decoding"]["anot"]["phase3"]["concurrency"] == 8
    assert provenance["cot"]["decoding"]["cot"]["cot"] == {"max_tokens": 512}
    assert provenance["anot"]["commit"] == git_commit() and len(provenance["cot"]["prompts"]["cot"]) == 64
    assert document["reports"]["anot"]["provenance"] == provenance["anot"]
    record = document["reports"]["anot"]["records"][0]
    assert set(record["phases"]) == {"P1", "P2", "P3"} and record["phases"]["P3"]["calls"] >= 1


def test_anot_cli_010_an_interrupted_run_keeps_the_finished_requests(tmp_path):
    from llamabot.models.scripted_provider import register_scripted_provider

    calls = {"n": 0}

    def dies_in_the_second_request(request):
        calls["n"] += 1
        if calls["n"] > 5:  # request 1 uses 5 calls (P1, P2, three steps)
            raise KeyboardInterrupt
        return eval_responder(request)

    name = register_scripted_provider(ScriptedModel(responder=dies_in_the_second_request, name="anot-cut"), prefix="scripted-cut")
    out = tmp_path / "partial.json"
    result = CliRunner().invoke(app, ["anot", "--data", str(FIXTURE_DATA), "--limit", "3", "--model", name, "--out", str(out)])
    assert result.exit_code != 0
    document = json.loads(out.read_text())
    assert document["partial"] is True and [r["request_id"] for r in document["records"]["anot"]] == ["R01"]
    assert document["provenance"]["anot"]["prompts"]["anot"] == prompt_version(ANoTBot(model=ScriptedModel()).prompt_texts)


def test_anot_cli_020_bad_arguments_are_refused():
    runner = CliRunner()
    result = runner.invoke(app, ["anot", "--data", str(FIXTURE_DATA), "--method", "tot"])
    assert result.exit_code != 0 and "--method must be one of anot, cot, both" in result.output
    result = runner.invoke(app, ["anot", "--data", "/nonexistent/dir"])
    assert result.exit_code == 2 and "file not found" in result.output
    result = runner.invoke(app, ["anot", "--data", str(FIXTURE_DATA), "--requests", "R01,R99"])
    assert result.exit_code == 2 and "unknown request ids ['R99']" in result.output
    result = runner.invoke(app, ["anot", "--data", str(FIXTURE_DATA), "--rank-by", "vibes"])
    assert result.exit_code != 0 and "--rank-by must be final or scores" in result.output
    assert runner.invoke(app, ["eval", "anot", "--help"]).exit_code == 0


def test_anot_cli_030_concurrency_overlaps_the_steps_of_a_layer_in_the_cli(tmp_path):
    """``--concurrency`` reaches the sync bot the CLI builds: the two condition steps of a layer wait on a
    two-party barrier that only overlapping calls release (one at a time, the barrier breaks after 5 s and the
    request is recorded as failed)."""
    from llamabot.models.scripted_provider import register_scripted_provider

    barrier, lock = threading.Barrier(2, timeout=5), threading.Lock()
    seen = {"in_flight": 0, "peak": 0}

    def respond(request):
        if phase(request) != "P3" or "top-5" in request.last_user_text:
            return eval_responder(request)
        with lock:
            seen["in_flight"] += 1
            seen["peak"] = max(seen["peak"], seen["in_flight"])
        try:
            barrier.wait()
            return text("[2]")
        finally:
            with lock:
                seen["in_flight"] -= 1

    name = register_scripted_provider(ScriptedModel(responder=respond, name="anot-conc"), prefix="scripted-conc")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["anot", "--data", str(FIXTURE_DATA), "--limit", "1", "--candidates", "4",
                                      "--model", name, "--concurrency", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())["reports"]["anot"]["records"][0]
    assert record["failed"] is None and record["errors"] == [] and seen["peak"] == 2

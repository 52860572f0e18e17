"""The general evaluation API (EVAL-*): any bot over a dataset with a scorer, concurrent, resumable, reported with
its provenance as a table, JSON and CSV; ``llamabot eval run MODULE:FACTORY``."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from llamabot import AgentBot
from llamabot.cli import app
from llamabot.evals import (
    Attempt,
    Case,
    Dataset,
    DatasetError,
    Outcome,
    ResumeError,
    aevaluate,
    answer_text,
    evaluate,
)
from llamabot.evals.run import read_log
from llamabot.evals.scorers import SCORERS, resolve_scorer
from llamabot.models.scripted import ScriptedModel, text, tool_call
from llamabot.toolkits.calculator import CALCULATOR_TOOLS

ARITH = [Case("a", "What is 23 times 19?", "437"), Case("b", "What is 6 times 7?", "42"),
         Case("c", "What is 12 times 12?", "144")]


def calculator_agent(model_name: str = "scripted-calc") -> AgentBot:
    """An AgentBot with the calculator tools whose scripted model multiplies the two numbers of the question."""

    def responder(request):
        last = request.messages[-1]
        if last["role"] == "tool":
            return tool_call("respond_to_user", response=f"The answer is {last['content']}.")
        a, b = map(int, re.findall(r"\d+", request.last_user_text))
        return tool_call("multiply", a=a, b=b)

    return AgentBot(tools=CALCULATOR_TOOLS, model=ScriptedModel(responder=responder, name=model_name))


def test_eval_data_010_datasets_load_from_json_jsonl_and_csv_with_field_aliases(tmp_path):
    (tmp_path / "d.json").write_text(json.dumps({"cases": [{"question": "q1", "answer": 1, "level": "easy"}]}))
    (tmp_path / "d.jsonl").write_text('{"id": "x", "input": "q1", "target": "t"}\n\n{"input": {"query": "q2"}}\n')
    (tmp_path / "d.csv").write_text("name,input,expected\nfirst,q1,e1\n,q2,e2\n")
    (tmp_path / "list.json").write_text(json.dumps([{"input": "q", "expected_output": "e"}]))
    one = Dataset.load(tmp_path / "d.json")
    assert one.name == "d" and one.cases == [Case("0", "q1", 1, {"level": "easy"})]
    lines = Dataset.load(tmp_path / "d.jsonl")
    assert [(c.id, c.input, c.expected) for c in lines] == [("x", "q1", "t"), ("1", {"query": "q2"}, None)]
    rows = Dataset.load(tmp_path / "d.csv", limit=5)
    assert [(c.id, c.input, c.expected) for c in rows] == [("first", "q1", "e1"), ("1", "q2", "e2")]
    assert Dataset.load(tmp_path / "list.json").cases[0].expected == "e"
    assert len(Dataset.load(tmp_path / "d.csv", limit=1)) == 1


def test_eval_data_020_unreadable_datasets_are_refused_naming_the_file_line_or_case(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": "q"}\n{not json\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl, line 2"):
        Dataset.load(bad)
    with pytest.raises(DatasetError, match="no input"):
        Dataset([{"expected": 1}])
    with pytest.raises(DatasetError, match="'a' is used twice"):
        Dataset([Case("a", 1), Case("a", 2)])
    with pytest.raises(DatasetError, match="cannot read"):
        Dataset.load(tmp_path / "missing.json")
    assert Dataset([Case("a", 1)]).version() != Dataset([Case("a", 2)]).version()


def test_eval_score_010_built_in_scorers_and_module_function_specs():
    case = Case("1", "4 9 10 13", "24")
    assert SCORERS["exact"](" 24 ", case) and not SCORERS["exact"]("24.0", case)
    assert SCORERS["contains"]("It is 24, surely", case) and not SCORERS["contains"]("25", case)
    assert SCORERS["number"]("Answer: 24.00001", case) and not SCORERS["number"]("23", case)
    assert SCORERS["game24"]("Answer: (10 - 4) * (13 - 9) = 24", case) and not SCORERS["game24"]("4*9", case)
    assert resolve_scorer("llamabot.evals.scorers:contains") is SCORERS["contains"]
    with pytest.raises(DatasetError, match="use a name"):
        resolve_scorer("nonsense")
    with pytest.raises(DatasetError, match="cannot load the scorer"):
        resolve_scorer("llamabot.evals.scorers:nothing_here")


def test_eval_run_010_an_agentbot_with_tools_is_evaluated_each_case_with_its_own_tokens():
    bot = calculator_agent()
    report = evaluate(bot, Dataset(ARITH, name="arith"), "number", concurrency=3)
    assert [a.case for a in report.attempts] == ["a", "b", "c"]
    assert [a.output for a in report.attempts] == ["The answer is 437.", "The answer is 42.", "The answer is 144."]
    assert all(a.score == 1.0 and a.error is None and a.tokens > 0 for a in report.attempts)
    summary = report.summary()
    assert summary["cases"] == summary["right"] == 3 and summary["mean_score"] == 1.0 and summary["errors"] == 0
    assert bot.memory == []  # every case is a run of its own, never one conversation


def test_eval_run_020_at_most_concurrency_cases_run_at_once_and_the_report_keeps_the_dataset_order():
    running, peak = 0, 0

    async def bot(question: str) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01 if question != "0" else 0.05)  # the first case ends last
        running -= 1
        return question

    cases = [Case(str(i), str(i), str(i)) for i in range(10)]
    report = asyncio.run(aevaluate(bot, Dataset(cases), "exact", concurrency=3))
    assert peak == 3 and [a.case for a in report.attempts] == [str(i) for i in range(10)]
    assert report.summary()["right"] == 10
    with pytest.raises(ValueError, match="at least 1"):
        evaluate(bot, Dataset(cases), concurrency=0)


def test_eval_run_030_a_failing_bot_or_scorer_is_a_recorded_zero_and_the_run_goes_on():
    def bot(question: str) -> str:  # a plain function runs in a thread
        if question == "boom":
            raise RuntimeError("the bot broke")
        return question.upper()

    def picky(output: str, case: Case) -> float:
        if case.id == "scorer":
            raise ValueError("cannot score")
        return 0.5

    report = evaluate(bot, Dataset([Case("ok", "x"), Case("bot", "boom"), Case("scorer", "y")]), picky)
    ok, broke, unscored = report.attempts
    assert ok.score == 0.5 and ok.output == "X" and ok.error is None
    assert broke.score == 0.0 and broke.output is None and broke.error == "RuntimeError: the bot broke"
    assert unscored.score == 0.0 and unscored.output == "Y" and unscored.error == "ValueError: cannot score"
    assert report.summary()["errors"] == 2 and report.summary()["right"] == 0


def test_eval_run_040_mapping_inputs_are_keyword_arguments_and_answers_are_read_as_text():
    class Result:
        answer = 17

    def bot(query: str, items: list) -> Result:
        assert query == "q" and items == [1, 2]
        return Result()

    report = evaluate(bot, Dataset([Case("1", {"query": "q", "items": [1, 2]}, 17)]), "number")
    assert report.attempts[0].output == "17" and report.attempts[0].score == 1.0
    assert answer_text(text("hi")) == "hi" and answer_text(3.5) == "3.5"


def test_eval_run_050_an_outcome_reports_its_tokens_a_measured_failure_and_its_measures():
    def bot(question: str) -> Outcome:
        if question == "lost":
            return Outcome(None, 7, "PlanValidationError: no plan", {"replans": 2})
        return Outcome(question, 5, metrics={"nodes": 3})

    report = evaluate(bot, Dataset([Case("1", "a", "a"), Case("2", "lost", "lost")]), "exact")
    right, lost = report.attempts
    assert (right.score, right.tokens, right.error, right.metrics) == (1.0, 5, None, {"nodes": 3})
    assert (lost.score, lost.output, lost.tokens, lost.error) == (0.0, None, 7, "PlanValidationError: no plan")
    assert lost.metrics == {"replans": 2} and report.to_dict()["attempts"][0]["metrics"] == {"nodes": 3}


def test_eval_res_040_kept_attempts_of_an_earlier_report_are_taken_instead_of_running_their_cases():
    calls: list[str] = []

    def bot(question: str) -> str:
        calls.append(question)
        return question

    earlier = [Attempt("1", "a", 1.0, 0.5, 9, metrics={"nodes": 1}), Attempt("gone", "x", 1.0, 0.1)]
    block = {"model": "m", "made": "by the caller"}
    report = evaluate(bot, Dataset([Case("1", "a", "a"), Case("2", "b", "b")]), "exact", kept=earlier,
                      provenance=block)
    assert calls == ["b"] and report.kept == 1 and report.attempts[0] is earlier[0]
    assert [a.case for a in report.attempts] == ["1", "2"] and report.provenance is block


def test_eval_res_010_a_resumed_log_keeps_its_attempts_and_runs_only_the_rest(tmp_path):
    log = tmp_path / "attempts.jsonl"
    calls: list[str] = []

    class Stopped(BaseException):
        """The process stops during the third case (as a kill or Ctrl-C would), past the bot's error handling."""

    def bot(question: str) -> str:
        calls.append(question)
        if question == "stop" and len(calls) == 3:
            raise Stopped
        return question

    dataset = Dataset([Case("1", "a", "a"), Case("2", "b", "b"), Case("3", "stop", "stop")])
    with pytest.raises(Stopped):
        evaluate(bot, dataset, "exact", concurrency=1, log=log)
    header, attempts = read_log(log)
    assert [a.case for a in attempts] == ["1", "2"] and header["dataset"]["cases"] == 3
    with log.open("a") as handle:
        handle.write('{"kind": "attempt", "case": "3", "out')  # a write cut off by a kill
    calls.clear()
    report = evaluate(bot, dataset, "exact", log=log)
    assert calls == ["stop"] and report.kept == 2 and report.summary()["right"] == 3
    header, attempts = read_log(log)
    assert sorted(a.case for a in attempts) == ["1", "2", "3"]  # the cut line is gone, the new attempt follows
    assert header["provenance"]["resumed_from"][0]["commit"] == report.provenance["resumed_from"][0]["commit"]


def test_eval_res_020_a_log_made_differently_is_refused_naming_each_difference(tmp_path):
    log = tmp_path / "attempts.jsonl"
    evaluate(calculator_agent(), Dataset(ARITH[:1], name="arith"), "number", log=log)
    with pytest.raises(ResumeError) as refused:
        evaluate(calculator_agent("other"), Dataset(ARITH[:1], name="other"), "number", log=log)
    assert "model: 'scripted-calc' != 'other'" in str(refused.value)
    assert "dataset.name: 'arith' != 'other'" in str(refused.value)
    with pytest.raises(ResumeError, match=r"scorer: 'number' != 'contains'"):
        evaluate(calculator_agent(), Dataset(ARITH[:1], name="arith"), "contains", log=log)
    log.write_text('{"kind": "attempt", "nope": 1}\n{"kind": "attempt"}\n')
    with pytest.raises(ResumeError, match="line 1"):
        evaluate(calculator_agent(), Dataset(ARITH[:1], name="arith"), "number", log=log)


def test_eval_res_030_a_larger_limit_extends_a_run_and_a_changed_case_runs_again(tmp_path):
    log = tmp_path / "attempts.jsonl"
    bot = calculator_agent()
    first = evaluate(bot, Dataset(ARITH[:2], name="arith"), "number", log=log)
    assert first.kept == 0 and len(bot.model.requests) == 4  # two calls per case: multiply, then the answer
    changed = Case("b", "What is 6 times 8?", "48")
    more = evaluate(bot, Dataset([ARITH[0], changed, ARITH[2]], name="arith"), "number", log=log)
    assert more.kept == 1 and len(bot.model.requests) == 8  # "a" kept; the changed "b" and the new "c" ran
    assert [a.output for a in more.attempts][1:] == ["The answer is 48.", "The answer is 144."]
    again = evaluate(bot, Dataset([ARITH[0], changed, ARITH[2]], name="arith"), "number", log=log)
    assert again.kept == 3 and len(bot.model.requests) == 8


def test_eval_rep_010_the_report_has_provenance_and_a_table_json_and_csv_view(tmp_path):
    bot = calculator_agent()
    report = evaluate(bot, Dataset(ARITH, name="arith"), "number")
    block = report.provenance
    assert block["model"] == "scripted-calc" and block["bot"] == "AgentBot" and block["scorer"] == "number"
    assert {"commit", "decoding", "prompts", "llamabot", "python", "created"} <= set(block)
    assert report.dataset == Dataset(ARITH, name="arith").describe()
    table = report.table()
    assert "The answer is 437." in table and table.splitlines()[-1].startswith("3/3 right, mean score 1.000")
    report.write_json(tmp_path / "r.json")
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["summary"]["right"] == 3 and len(document["attempts"]) == 3
    assert document["dataset"]["version"] == report.dataset["version"]
    rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert [r["case"] for r in rows] == ["a", "b", "c"] and rows[0]["score"] == "1.0"


def test_eval_cli_010_eval_run_evaluates_a_bot_factory_with_a_scorer(tmp_path, monkeypatch):
    (tmp_path / "my_bots.py").write_text(textwrap.dedent("""
        from tests.evals.test_api import calculator_agent

        def make(model=None):
            return calculator_agent(model or "scripted-calc")

        def half(output, case):
            return 0.5
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "arith.jsonl"
    data.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in ARITH))
    out, rows, log = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "log.jsonl"
    runner = CliRunner()
    result = runner.invoke(app, ["eval", "run", "my_bots:make", "--dataset", str(data), "--scorer", "number",
                                 "--out", str(out), "--csv", str(rows), "--log", str(log), "--concurrency", "2"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "3/3 right" in result.output and json.loads(out.read_text())["summary"]["right"] == 3
    assert rows.read_text().startswith("case,score") and len(read_log(log)[1]) == 3
    again = runner.invoke(app, ["eval", "run", "my_bots:make", "--dataset", str(data), "--scorer", "my_bots:half",
                                "--limit", "1"])
    assert again.exit_code == 0 and "0/1 right, mean score 0.500" in again.output
    refused = runner.invoke(app, ["eval", "run", "my_bots:make", "--dataset", str(data), "--log", str(log),
                                  "--scorer", "contains"])
    assert refused.exit_code == 2 and "made differently" in refused.output
    bad = runner.invoke(app, ["eval", "run", "my_bots:nothing", "--dataset", str(data)])
    assert bad.exit_code == 2 and "cannot load the bot factory" in bad.output
    sys.modules.pop("my_bots", None)


def test_eval_layer_020_importing_the_evaluation_api_loads_no_model_library():
    import subprocess

    code = ("import sys\nimport llamabot.evals, llamabot.evals.game24, llamabot.evals.anot\n"
            "print(sorted(m for m in ('litellm', 'llama_cpp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"

"""EVAL-COMPAT-010: the evaluation reports kept in ``benchmarks/results/`` are read by the harnesses that moved to
``llamabot.evals`` (the report format did not change): every attempt loads as the harness's record, and the
summaries computed again equal the stored ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llamabot.evals import aot, tot
from llamabot.evals.anot.harness import EvalReport as AnotReport
from llamabot.evals.anot.harness import RequestRecord

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def _reports(pattern: str) -> list[Path]:
    found = sorted(RESULTS.glob(pattern))
    assert found, f"no reports match {pattern}"
    return found


@pytest.mark.parametrize("path", _reports("aot/*.json"), ids=lambda p: p.name)
def test_eval_compat_010_aot_reports_load_and_summarise_as_stored(path):
    report = json.loads(path.read_text())
    for method, stored in report["methods"].items():
        attempts = [aot.Attempt(**a) for a in stored["attempts"]]
        again = aot.summarise(method, attempts)
        assert (again.correct, again.total) == (stored["correct"], stored["total"])


@pytest.mark.parametrize("path", _reports("tot/*.json"), ids=lambda p: p.name)
def test_eval_compat_010_tot_reports_load_and_summarise_as_stored(path):
    report = json.loads(path.read_text())
    attempts = [tot.Attempt(**a) for a in report["attempts"]]
    again = tot.EvalReport(report["model"], report["dataset"], report["config"], attempts).summaries()
    stored = report.get("summary")
    if stored is not None:
        assert {s.method: s.solved for s in again} == {s["method"]: s["solved"] for s in stored}


@pytest.mark.parametrize("path", _reports("anot_*.json"), ids=lambda p: p.name)
def test_eval_compat_010_anot_reports_load_and_summarise_as_stored(path):
    document = json.loads(path.read_text())
    if "reports" in document:
        for stored in document["reports"].values():
            fields = {k: stored[k] for k in ("method", "model", "dataset", "candidates", "seed")}
            again = AnotReport(**fields, records=[RequestRecord(**r) for r in stored["records"]]).summary()
            assert again["hits@1"] == stored["summary"]["hits@1"] and again["mrr"] == stored["summary"]["mrr"]
    else:  # a partial report: records per method
        assert all(RequestRecord(**r) for records in document["records"].values() for r in records)

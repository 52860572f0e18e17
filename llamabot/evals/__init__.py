"""Evaluations: run a bot over a dataset, score its answers, and report with provenance.

The general API (any bot, ``AgentBot`` with tools included)::

    from llamabot.evals import Case, Dataset, evaluate

    dataset = Dataset([Case("1", "What is 23 times 19?", "437")], name="arith")
    report = evaluate(bot, dataset, "number", concurrency=4, log="arith_attempts.jsonl")  # resumable
    print(report.table()); report.write_json("arith.json"); open("arith.csv", "w").write(report.to_csv())

The pattern harnesses: :mod:`llamabot.evals.aot` (AoT vs direct and CoT answers), :mod:`llamabot.evals.tot`
(ToT vs IO and CoT on the Game of 24, :mod:`llamabot.evals.game24`), :mod:`llamabot.evals.anot` (ANoT vs a CoT
ranking, Hits@k and MRR), each built on :func:`evaluate`: a case per item and method, a bot that returns an
:class:`Outcome` with its measures, the harness's own report made from the attempts. Every report carries
:mod:`llamabot.evals.provenance`'s block.
"""

from __future__ import annotations

from llamabot.evals.dataset import Case, Dataset, DatasetError
from llamabot.evals.provenance import ResumeError
from llamabot.evals.report import Attempt, Report
from llamabot.evals.run import Outcome, aevaluate, answer_text, evaluate
from llamabot.evals.scorers import SCORERS, contains, exact, number, resolve_scorer

__all__ = ["SCORERS", "Attempt", "Case", "Dataset", "DatasetError", "Outcome", "Report", "ResumeError", "aevaluate",
           "answer_text", "contains", "evaluate", "exact", "number", "resolve_scorer"]

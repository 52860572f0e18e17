"""The report of a general evaluation (:func:`llamabot.evals.evaluate`): its attempts in the dataset's order, the
provenance and the dataset block, a summary, and three views: a text table, a JSON document, CSV rows."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llamabot.evals.report_file import write_report


@dataclass(slots=True)
class Attempt:
    """One case: the bot's answer as text, its score (0-1), wall time, tokens, the error if it failed, and the
    measures of its run that the bot reported (:class:`~llamabot.evals.run.Outcome`)."""

    case: str
    output: str | None
    score: float
    seconds: float
    tokens: int = 0
    error: str | None = None
    expected: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)


CSV_COLUMNS = ("case", "score", "seconds", "tokens", "error", "expected", "output")


@dataclass
class Report:
    """``attempts`` in the dataset's order; ``kept``: how many of them came from the resumed log."""

    attempts: list[Attempt]
    provenance: dict[str, Any] = field(default_factory=dict)
    dataset: dict[str, Any] = field(default_factory=dict)
    kept: int = 0

    def summary(self) -> dict[str, Any]:
        """Cases, mean score, right answers (score 1), errors, and means of seconds and tokens per case."""
        n = len(self.attempts)

        def mean(values: list[float]) -> float:
            return sum(values) / n if n else 0.0

        return {
            "cases": n,
            "mean_score": mean([a.score for a in self.attempts]),
            "right": sum(1 for a in self.attempts if a.score >= 1.0),
            "errors": sum(1 for a in self.attempts if a.error is not None),
            "mean_seconds": mean([a.seconds for a in self.attempts]),
            "mean_tokens": mean([a.tokens for a in self.attempts]),
            "kept_from_log": self.kept,
        }

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "provenance": self.provenance, "summary": self.summary(),
                "attempts": [asdict(a) for a in self.attempts]}

    def write_json(self, path: str | Path) -> None:
        """The JSON document, written whole or not at all (:func:`~llamabot.evals.report_file.write_report`)."""
        write_report(Path(path), self.to_dict())

    def to_csv(self) -> str:
        """One row per attempt (:data:`CSV_COLUMNS`), with a header."""
        out = io.StringIO()
        writer = csv.DictWriter(out, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(asdict(a) for a in self.attempts)
        return out.getvalue()

    def table(self, width: int = 40) -> str:
        """A plain-text table (case, score, seconds, tokens, output or error cut to ``width``) and the summary."""
        rows = [("case", "score", "s", "tokens", "output")]
        for a in self.attempts:
            shown = f"error: {a.error}" if a.error is not None else " ".join(str(a.output).split())
            rows.append((a.case, f"{a.score:.2f}", f"{a.seconds:.2f}", str(a.tokens), shown[:width]))
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        s = self.summary()
        lines.append(f"{s['right']}/{s['cases']} right, mean score {s['mean_score']:.3f}, {s['errors']} errors, "
                     f"{s['mean_seconds']:.2f} s and {s['mean_tokens']:.0f} tokens per case"
                     f" ({self.provenance.get('model', '?')}, {self.dataset.get('name', '?')})")
        return "\n".join(lines)

"""Evaluate any bot over a dataset with a scorer: concurrent, resumable, with the report's provenance.

    from llamabot.evals import Dataset, evaluate

    report = evaluate(bot, Dataset.load("qa.jsonl"), "number", concurrency=4, log="qa_attempts.jsonl")
    print(report.table())

**The bot** is anything called with a case's input (a mapping input: as keyword arguments): a graph bot
(``AgentBot`` with its tools, ``AoTBot``...: ``arun_with_trace``, so each case's tokens are its own run's), a bot
with an async ``__call__`` or ``arun``, or a plain function (run in a thread). Its answer is scored as text
(:func:`answer_text`).

**Concurrency**: at most ``concurrency`` cases run at once (an ``asyncio.Semaphore``); the report keeps the
dataset's order.

**Resume**: with ``log=PATH`` each finished attempt is appended to a JSON-lines file as it ends (after a header
line with the provenance, the scorer, the dataset's name and version; each attempt with its case's version). Run
again with the same ``log``, the attempts of cases that did not change are kept and only the other cases run (a larger
``limit`` extends a run); a log made with another model, other settings, other prompts, another scorer or
another dataset name is refused (:class:`~llamabot.evals.provenance.ResumeError` naming each difference).
``kept=`` takes the attempts of an earlier report instead (the pattern harnesses resume from their JSON report).

**Measures**: a bot that returns an :class:`Outcome` reports its own tokens, a failure it measured, and extra
measures of its run (plan validity, nodes explored, a ranking...), kept as the attempt's ``metrics``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llamabot.evals.dataset import Case, Dataset
from llamabot.evals.provenance import ResumeError, check_resumable, provenance
from llamabot.evals.report import Attempt, Report
from llamabot.evals.scorers import Scorer, resolve_scorer


@dataclass(frozen=True)
class Outcome:
    """What a bot made of a case, measured by the bot itself: ``answer`` (scored as text; ``None``: no answer,
    score 0), ``tokens`` its run spent, ``error`` a failure it handled (recorded; an answer is still scored) and
    ``metrics``, the measures of its run that the attempt keeps (JSON-ready)."""

    answer: Any
    tokens: int = 0
    error: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)


def answer_text(result: Any) -> str:
    """A bot's answer as text: a string itself; else its ``content`` (a reply) or ``answer`` (AoT, ToT); a
    pydantic model as JSON; anything else ``str()``."""
    if isinstance(result, str):
        return result
    for attribute in ("content", "answer"):
        value = getattr(result, attribute, None)
        if value is not None and not callable(value):
            return value if isinstance(value, str) else str(value)
    dump = getattr(result, "model_dump_json", None)
    return dump() if callable(dump) else str(result)


def _tokens(result: Any, trace: Any) -> int:
    usage = getattr(trace, "usage", None) if trace is not None else getattr(result, "usage", None)
    total = getattr(usage, "total_tokens", 0)
    return total if isinstance(total, int) else 0


async def _call(bot: Any, value: Any) -> tuple[Any, Any]:
    """``(result, trace or None)`` of one call of ``bot`` on a case's input."""
    args, kwargs = ((), dict(value)) if isinstance(value, Mapping) else ((value,), {})
    if hasattr(bot, "arun_with_trace"):
        return await bot.arun_with_trace(*args, **kwargs)
    if inspect.iscoroutinefunction(getattr(bot, "arun", None)):
        return await bot.arun(*args, **kwargs), None
    if inspect.iscoroutinefunction(bot) or inspect.iscoroutinefunction(type(bot).__call__):
        return await bot(*args, **kwargs), None
    return await asyncio.to_thread(bot, *args, **kwargs), None


async def run_case(bot: Any, case: Case, scorer: Scorer) -> Attempt:
    """Run and score one case; an error of the bot or the scorer is recorded with score 0, never raised."""
    started = time.perf_counter()
    output, measured = None, Outcome(None)
    try:
        result, trace = await _call(bot, case.input)
        measured = result if isinstance(result, Outcome) else Outcome(result, _tokens(result, trace))
        output = None if measured.answer is None else answer_text(measured.answer)
        score = 0.0 if output is None else float(scorer(output, case))
    except Exception as exc:  # noqa: BLE001 - one failed case is a recorded failure, not the end of the run
        return Attempt(case.id, output, 0.0, time.perf_counter() - started, measured.tokens,
                       f"{type(exc).__name__}: {exc}", case.expected, dict(measured.metrics))
    return Attempt(case.id, output, score, time.perf_counter() - started, measured.tokens, measured.error,
                   case.expected, dict(measured.metrics))


def bot_provenance(bot: Any, scorer: Any) -> dict[str, Any]:
    """The provenance of an evaluation of ``bot``: its model's name, its settings (``decoding`` or
    ``model_settings``) and its prompts (``prompt_texts`` or ``system_prompt``), by :func:`provenance`."""
    model = getattr(bot, "model_name", None) or getattr(getattr(bot, "model", None), "name", None)
    settings = getattr(bot, "decoding", None) or getattr(bot, "model_settings", None) or {}
    texts = getattr(bot, "prompt_texts", None) or getattr(bot, "system_prompt", None) or ()
    name = getattr(bot, "__qualname__", type(bot).__qualname__)
    block = provenance(model if isinstance(model, str) and model else "unknown",
                       {"bot": json.loads(json.dumps(settings, default=str))},
                       {"bot": texts if isinstance(texts, str) else [str(t) for t in texts]})
    return {**block, "bot": name, "scorer": getattr(scorer, "__qualname__", str(scorer))}


def read_log(path: Path) -> tuple[dict[str, Any] | None, list[Attempt]]:
    """The last header and the attempts of an attempts log (a last line cut off by a kill is skipped)."""
    header, entries = _log_entries(path)
    return header, [attempt for attempt, _ in entries]


def _log_entries(path: Path) -> tuple[dict[str, Any] | None, list[tuple[Attempt, str | None]]]:
    """The last header, and each attempt with the version its case had when it ran."""
    header, entries = None, []
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        try:
            entry = json.loads(line)
            if entry.pop("kind") == "header":
                header = entry
            else:
                version = entry.pop("case_version", None)
                entries.append((Attempt(**entry), version))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            if number < len(lines):
                raise ResumeError(f"{path}, line {number}: not an attempt of this log: {exc}") from exc
    return header, entries


def _drop_cut_line(path: Path) -> None:
    """Remove a last line that a kill cut off while it was written, so that appended lines follow whole ones."""
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])


def _resumed(path: Path, header: dict[str, Any], case_versions: dict[str, str]) -> dict[str, Attempt]:
    """Case id -> the attempt of the log at ``path`` that a run with ``header`` keeps: its case is in
    ``case_versions`` (id -> version now) with the version it had; ``ResumeError`` for a log made differently."""
    before, entries = _log_entries(path)
    if before is None:
        return {}
    name, now = before["dataset"].get("name"), header["dataset"]["name"]
    check_resumable(before["provenance"], header["provenance"],
                    [f"dataset.name: {name!r} != {now!r}"] if name != now else [])
    return {a.case: a for a, version in entries if version is not None and version == case_versions.get(a.case)}


async def aevaluate(bot: Any, dataset: Dataset, scorer: str | Scorer = "exact", *, concurrency: int = 4,
                    log: str | Path | None = None, on_attempt: Callable[[Attempt], None] | None = None,
                    kept: Iterable[Attempt] = (), provenance: dict[str, Any] | None = None) -> Report:
    """Run ``bot`` on every case of ``dataset`` (at most ``concurrency`` at once), score each answer with
    ``scorer`` (a name, ``module:function`` or a function ``(output, case) -> bool | float``) and return the
    :class:`Report`. ``log``: the attempts file that makes the run resumable (see the module docstring);
    ``on_attempt`` sees each attempt run now, as it ends. ``kept``: attempts made before (of an earlier report),
    taken for their cases instead of running them. ``provenance``: the report's block when the caller made it
    (a harness comparing several methods), else :func:`bot_provenance`."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    score = resolve_scorer(scorer)
    header = {"provenance": provenance if provenance is not None else bot_provenance(bot, score),
              "dataset": dataset.describe()}
    versions = {case.id: case.version() for case in dataset}
    path = Path(log) if log is not None else None
    done = {a.case: a for a in kept if a.case in versions}
    if path is not None and path.exists() and path.stat().st_size:
        _drop_cut_line(path)
        done = {**_resumed(path, header, versions), **done}
    handle = path.open("a", encoding="utf-8") if path is not None else None
    try:
        if handle is not None:
            handle.write(json.dumps({"kind": "header", **header}, default=str) + "\n")
            handle.flush()
        limit = asyncio.Semaphore(concurrency)

        async def one(case: Case) -> Attempt:
            async with limit:
                attempt = await run_case(bot, case, score)
            if handle is not None:
                line = {"kind": "attempt", **asdict(attempt), "case_version": versions[case.id]}
                handle.write(json.dumps(line, default=str) + "\n")
                handle.flush()
            if on_attempt is not None:
                on_attempt(attempt)
            return attempt

        ran = await asyncio.gather(*(one(case) for case in dataset if case.id not in done))
    finally:
        if handle is not None:
            handle.close()
    by_case = {**done, **{a.case: a for a in ran}}
    return Report([by_case[case.id] for case in dataset], header["provenance"], header["dataset"], len(done))


def evaluate(bot: Any, dataset: Dataset, scorer: str | Scorer = "exact", *, concurrency: int = 4,
             log: str | Path | None = None, on_attempt: Callable[[Attempt], None] | None = None,
             kept: Iterable[Attempt] = (), provenance: dict[str, Any] | None = None) -> Report:
    """:func:`aevaluate` from synchronous code (not inside a running event loop)."""
    return asyncio.run(aevaluate(bot, dataset, scorer, concurrency=concurrency, log=log, on_attempt=on_attempt,
                                 kept=kept, provenance=provenance))

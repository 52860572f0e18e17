"""The run state of AoT, and the bookkeeping of self-consistency (``samples=k``): each sample is one whole
plan -> validate -> execute pass (re-plans included); a finished sample keeps its answer, plan and record, a
sample that gave up keeps its error; after the k-th sample the executed plans vote (:mod:`vote`).

Keys of the shared dict (data only: it round-trips through the state codec at every node boundary):

| key | meaning |
|---|---|
| ``memory`` | the planner's conversation: the question, then each rejected or failed plan and what was wrong |
| ``plan``, ``notes`` | the current sample's valid plan and its validation notes |
| ``plan_errors``, ``parse_failures`` | the errors of each rejected plan; replies that did not parse |
| ``execution_failures`` | the failures of this sample's executed plans that led to a re-plan |
| ``record``, ``layer`` | the execution record of the current plan; the next layer to run |
| ``samples`` | the finished samples (``answer`` or ``error``, ``plan``, ``record``), when ``samples > 1`` |
| ``drafts`` | every sample's first planner reply (``ModelReply.to_dict()``), drafted at once, when ``samples > 1`` |
| ``vote`` | the winning sample's index and the votes of each distinct answer, once voted |
"""

from __future__ import annotations

from typing import Any

from llamabot.models.messages import user
from llamabot.reasoning.aot.vote import majority

#: The action that starts the next sample; the action that ends the last one with the vote.
SAMPLE = "sample"
VOTE = "vote"


def new_aot_state(question: str) -> dict[str, Any]:
    """The shared dict of a new run."""
    return {
        "memory": [user(question)],
        "plan": None,
        "notes": [],
        "plan_errors": [],
        "parse_failures": 0,
        "execution_failures": [],
        "record": None,
        "layer": 0,
        "samples": [],
        "drafts": [],
        "vote": None,
    }


def _next(shared: dict[str, Any], samples: int) -> str:
    """After a sample: start the next one from the question alone, or vote after the last."""
    if len(shared["samples"]) >= samples:
        return VOTE
    shared.update(
        memory=shared["memory"][:1],
        plan=None,
        notes=[],
        plan_errors=[],
        execution_failures=[],
        record=None,
        layer=0,
    )
    return SAMPLE


def sample_finished(shared: dict[str, Any], samples: int) -> str:
    """The current sample's plan executed: keep its answer, plan and record; the next action."""
    record = shared["record"]
    shared["samples"].append(
        {
            "answer": record.answer,
            "error": None,
            "plan": shared["plan"],
            "record": record,
            "plan_errors": shared["plan_errors"],
            "execution_failures": shared["execution_failures"],
        }
    )
    return _next(shared, samples)


def sample_failed(shared: dict[str, Any], samples: int, error: str) -> str | None:
    """The current sample gave up (no valid plan, or its plans kept failing): keep why. The next action, or
    ``None`` when the run must fail with the caller's error (one sample, or the last of samples that all
    failed: there is nothing to vote on)."""
    if samples == 1:
        return None
    shared["samples"].append(
        {
            "answer": None,
            "error": error,
            "plan": shared["plan"],
            "record": shared["record"],
            "plan_errors": shared["plan_errors"],
            "execution_failures": shared["execution_failures"],
        }
    )
    last = len(shared["samples"]) >= samples
    if last and all(s["error"] is not None for s in shared["samples"]):
        return None
    return _next(shared, samples)


def vote(shared: dict[str, Any]) -> None:
    """The majority answer of the finished samples becomes the run's: its sample's plan, record and history
    take the current keys; ``vote`` keeps the winner's index (into ``samples``) and every answer's votes."""
    answered = [i for i, s in enumerate(shared["samples"]) if s["error"] is None]
    outcome = majority([shared["samples"][i]["answer"] for i in answered])
    winner = answered[outcome.winner]
    chosen = shared["samples"][winner]
    shared.update(
        plan=chosen["plan"],
        record=chosen["record"],
        plan_errors=chosen["plan_errors"],
        execution_failures=chosen["execution_failures"],
    )
    shared["vote"] = {
        "winner": winner,
        "votes": outcome.votes,
        "counts": [[answered[first], n] for first, n in outcome.counts],
    }

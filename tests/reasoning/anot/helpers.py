"""Shared fixtures data and a scripted model that plays all three ANoT phases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llamabot.models.reply import ModelRequest
from llamabot.models.scripted import json_reply, text, tool_call

FIXTURE_DATA = Path(__file__).resolve().parents[2] / "fixtures" / "anot" / "philly_cafes_mini"

ITEMS: list[dict[str, Any]] = [
    {"name": "A", "attributes": {"GoodForKids": True, "WiFi": "free", "Ambience": {"hipster": True}}, "reviews": [{"text": "Cozy and quiet"}]},
    {"name": "B", "attributes": {"GoodForKids": False, "WiFi": "no", "Ambience": {"hipster": False}}, "reviews": [{"text": "loud"}]},
    {"name": "C", "attributes": {"GoodForKids": True, "Ambience": None}, "reviews": [{"text": "so cozy"}, {"text": "COZY!"}]},
]

STRATEGY = {
    "conditions": [
        {"request_words": "w", "id": 1, "type": "ATTR", "path": "attributes.GoodForKids", "expected": "True"},
        {"request_words": "w", "id": 2, "type": "REVIEW_TEXT", "path": "reviews", "expected": "cozy"},
    ],
    "logic": "AND(1, 2)",
    "total_items": 3,
    "message": "kids and cozy",
}

#: Conditions the model judges (HOURS is a ``model`` condition type): their draft steps are LLM steps, so phase 3
#: calls the model once per condition (the conditions of ``STRATEGY`` are CHECK steps, evaluated without it).
MODEL_STRATEGY = {
    "conditions": [
        {"request_words": "w", "id": 1, "type": "HOURS", "path": "hours.Monday", "expected": "open at 8:00"},
        {"request_words": "w", "id": 2, "type": "HOURS", "path": "hours.Sunday", "expected": "open at 9:00"},
    ],
    "logic": "AND(1, 2)",
    "total_items": 3,
    "message": "open early",
}


def phase(request: ModelRequest) -> str:
    """Which phase a request belongs to: P1 (structured output), P2 (tools offered) or P3 (a step)."""
    if request.response_format:
        return "P1"
    if request.tools:
        return "P2"
    return "P3"


def three_phase_responder(final: str = "[3, 1, 2]", condition: str = "[1, 3]", strategy: dict | None = None):
    """A stateless responder: P1 answers the strategy, P2 calls done() at once, P3 answers steps."""

    def respond(request: ModelRequest):
        kind = phase(request)
        if kind == "P1":
            return json_reply(strategy or STRATEGY)
        if kind == "P2":
            return tool_call("done")
        return text(final if "top-5" in request.last_user_text else condition)

    return respond


def scripted_phase2(*decisions, final: str = "[3, 1, 2]", condition: str = "[1, 3]", strategy: dict | None = None):
    """P1 answers the strategy; the k-th phase 2 decision answers ``decisions[k]`` (the last one repeats);
    P3 answers steps. Stateless, so concurrent runs can share the model."""

    def respond(request: ModelRequest):
        kind = phase(request)
        if kind == "P1":
            return json_reply(strategy or STRATEGY)
        if kind == "P2":
            made = sum(1 for m in request.messages if m["role"] == "assistant")
            return decisions[min(made, len(decisions) - 1)]
        return text(final if "top-5" in request.last_user_text else condition)

    return respond

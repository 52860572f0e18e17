"""Reading thoughts and scores out of model text. Pure; model output is data, never code.

Both parsers try, in order: the whole reply as JSON (``json``), a fenced ```json block (``fenced_json``), the
first JSON value embedded in prose (``embedded_json``), then numbered lines (``numbered``). They return
``(value, parser_mode)``; ``parser_mode`` is ``"none"`` when nothing could be read. Unlike the seed, the score
parser never invents a score: a thought it cannot find is simply absent, and the machine decides whether to
ask again (retry budget) or fall back. A numbered line's digits are never split into an id and a score
(``13. looks fine`` scores nothing).

Both are total and linear in the reply's length: whatever the text (unclosed fences, thousands of nested
brackets, numbers too large for a float or past Python's integer-digit limit) they return, with
``parser_mode`` ``"none"`` when nothing could be read, so the machine's retry budget applies.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from llamabot.models.text_fences import fenced_blocks
from llamabot.models.tool_call_text import JSON_FAILURES
from llamabot.reasoning.tot.messages import ThoughtEntry

_NUMBERED_THOUGHT = re.compile(r"^\s*(?:[-*]\s*)?(?:(?:thought|step|option|candidate)\s*)?(\d+)\s*[.:)\]]\s+(\S.*)$", re.I)
# The id is a whole run of digits ((?!\d): never split into an id and a score), then a separator (punctuation
# or blanks) before the score, a whole number (no digit, '.' or letter after it) or a label. Anchored at the
# line start (re.match), with no two quantifiers competing for the same characters, so linear per line.
_NUMBERED_SCORE = re.compile(
    r"\s*(?:[-*]\s*)?(?:thought\s*|candidate\s*|t)?(\d+)(?!\d)(?:\s*[.:)\]=-]\s*|\s+)(?:score\b[\s:=]*)?"
    r"(-?\d+(?:\.\d+)?(?![\d.\w])|(?:sure|likely|maybe|impossible)\b)",
    re.I,
)
#: Ids and indexes longer than this are no thought's (and would reach Python's integer-digit limit).
_MAX_INDEX_DIGITS = 6
_LABELS = {"sure": 1.0, "likely": 0.5, "maybe": 0.5, "impossible": 0.0}
_THOUGHT_LIST_KEYS = ("thoughts", "steps", "candidates", "options", "ideas")
_THOUGHT_TEXT_KEYS = ("content", "thought", "text", "step")
_MAX_EMBEDDED_TRIES = 32


def _json_candidates(text: str) -> Iterator[tuple[Any, str]]:
    """Every JSON reading of ``text``, most faithful first: ``(value, parser_mode)``."""
    stripped = text.strip()
    try:
        yield json.loads(stripped), "json"
    except JSON_FAILURES:
        pass
    for block in fenced_blocks(text):
        try:
            yield json.loads(block), "fenced_json"
        except JSON_FAILURES:
            pass
    decoder = json.JSONDecoder()
    tries = 0
    for match in re.finditer(r"[\[{]", text):
        tries += 1
        if tries > _MAX_EMBEDDED_TRIES:
            break
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except JSON_FAILURES:
            continue
        yield value, "embedded_json"


def _thought_text(item: Any) -> str:
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, dict):
        for key in _THOUGHT_TEXT_KEYS:
            if isinstance(item.get(key), str):
                return item[key].strip()
    return ""


def _thoughts_from_json(value: Any) -> list[str]:
    items: Any = None
    if isinstance(value, list):
        items = value
    elif isinstance(value, dict):
        items = next((value[k] for k in _THOUGHT_LIST_KEYS if isinstance(value.get(k), list)), None)
    if items is None:
        return []
    return [text for text in (_thought_text(item) for item in items) if text]


def parse_thoughts(text: str | None) -> tuple[list[str], str]:
    """The thoughts in a model reply, in order, and how they were read.

    Accepts ``{"thoughts": ["...", ...]}`` (or ``{"thoughts": [{"content": "..."}]}``, or a bare list), fenced or
    embedded, and falls back to numbered lines (``1. ...``, ``2) ...``, ``Step 3: ...``).
    """
    if not text or not text.strip():
        return [], "none"
    for value, mode in _json_candidates(text):
        thoughts = _thoughts_from_json(value)
        if thoughts:
            return thoughts, mode
    parts: list[list[str]] = []  # each thought's lines, joined once at the end (linear, not quadratic)
    for line in text.splitlines():
        match = _NUMBERED_THOUGHT.match(line)
        if match:
            parts.append([match.group(2).strip()])
        elif parts and line.strip() and not line.strip().startswith(("```", "{", "}")):
            parts[-1].append(line.strip())
    thoughts = [" ".join(lines) for lines in parts]
    return (thoughts, "numbered") if thoughts else ([], "none")


def _entries(thoughts: Sequence[ThoughtEntry | str]) -> list[ThoughtEntry]:
    return [t if isinstance(t, ThoughtEntry) else ThoughtEntry(f"t{i}", str(t)) for i, t in enumerate(thoughts, 1)]


def _raw_score(value: Any) -> tuple[float, bool] | None:
    """``(number, is_label)`` for a score as a model may write it, or ``None``."""
    if isinstance(value, dict):
        value = value.get("score", value.get("value"))
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an integer too large for a float is no score
            return None
    elif isinstance(value, str):
        word = value.strip().lower()
        if word in _LABELS:
            return _LABELS[word], True
        try:
            number = float(word)
        except ValueError:
            return None
    else:
        return None
    return (number, False) if math.isfinite(number) else None


def _key_to_id(key: Any, entries: list[ThoughtEntry]) -> str | None:
    text = str(key).strip()
    lowered = text.lower()
    for entry in entries:
        if lowered == entry.id.lower() or text == entry.content:
            return entry.id
    digits = re.fullmatch(r"(?:t|thought\s*|candidate\s*)?(\d+)", lowered)
    if digits and len(digits.group(1)) <= _MAX_INDEX_DIGITS and 1 <= int(digits.group(1)) <= len(entries):
        return entries[int(digits.group(1)) - 1].id
    return None


def _scores_from_json(value: Any, entries: list[ThoughtEntry]) -> dict[str, tuple[float, bool]]:
    if isinstance(value, dict) and "scores" in value:
        value = value["scores"]
    found: dict[str, tuple[float, bool]] = {}
    if isinstance(value, dict):
        for key, raw in value.items():
            thought_id, score = _key_to_id(key, entries), _raw_score(raw)
            if thought_id is not None and score is not None:
                found[thought_id] = score
    elif isinstance(value, list):
        for index, raw in enumerate(value[: len(entries)]):
            key = raw.get("id", index + 1) if isinstance(raw, dict) else index + 1
            thought_id, score = _key_to_id(key, entries), _raw_score(raw)
            if thought_id is not None and score is not None:
                found[thought_id] = score
    return found


def _normalised(found: dict[str, tuple[float, bool]]) -> dict[str, float]:
    """Scores in [0, 1]: numbers on a 0-10 or 0-100 scale are rescaled (all of a reply's numbers together)."""
    numbers = [n for n, is_label in found.values() if not is_label]
    top = max(numbers, default=0.0)
    scale = 1.0 if top <= 1.0 else 10.0 if top <= 10.0 else 100.0 if top <= 100.0 else top
    return {
        key: (n if is_label else min(max(n / scale, 0.0), 1.0))
        for key, (n, is_label) in found.items()
    }


def parse_scores(text: str | None, thoughts: Sequence[ThoughtEntry | str]) -> tuple[dict[str, float], str]:
    """Scores in [0, 1] for the ``thoughts`` found in a model reply, keyed by thought id, and how they were read.

    Accepts ``{"scores": {"t1": 0.8}}``, ``{"t1": 0.8}``, ``{"scores": [0.8, 0.4]}``, keys by id, by 1-based
    index or by content; values as numbers, numeric strings or ``sure``/``likely``/``impossible``; fenced or
    embedded; then numbered lines (``1. 0.8``, ``t2: 0.4``). Thoughts without a readable score are left out.
    """
    entries = _entries(thoughts)
    if not text or not text.strip() or not entries:
        return {}, "none"
    for value, mode in _json_candidates(text):
        found = _scores_from_json(value, entries)
        if found:
            return _normalised(found), mode
    found = {}
    for line in text.splitlines():
        match = _NUMBERED_SCORE.match(line)
        if match is None:
            continue
        thought_id, score = _key_to_id(match.group(1), entries), _raw_score(match.group(2))
        if thought_id is not None and score is not None and thought_id not in found:
            found[thought_id] = score
    return (_normalised(found), "numbered") if found else ({}, "none")


#: The key of an evaluation reply that carries continuations (:func:`parse_continuations`).
NEXT_KEY = "next"


def parse_continuations(text: str | None, thoughts: Sequence[ThoughtEntry | str]) -> dict[str, tuple[str, ...]]:
    """Next steps an evaluation reply wrote for its candidates: ``{"scores": {...}, "next": {"t1": ["<step>"]}}``
    -> ``{"t1": ("<step>",)}`` (keys read as :func:`parse_scores` reads them; non-text steps, empties and
    repeats left out). Only a JSON object with a ``"next"`` mapping carries any; every other reply none. A
    task's prompts put them there (:meth:`~llamabot.reasoning.tot.prompts.ToTPrompts.read_reply`) when the
    evaluator's own reply already wrote a candidate's next step, e.g. the Game of 24's last step."""
    entries = _entries(thoughts)
    if not text or not entries:
        return {}
    try:
        value = json.loads(text)
    except JSON_FAILURES:
        return {}
    written = value.get(NEXT_KEY) if isinstance(value, dict) else None
    if not isinstance(written, dict):
        return {}
    found: dict[str, tuple[str, ...]] = {}
    for key, steps in written.items():
        thought_id = _key_to_id(key, entries)
        if thought_id is None or not isinstance(steps, list):
            continue
        kept = tuple(dict.fromkeys(s.strip() for s in steps if isinstance(s, str) and s.strip()))
        if kept:
            found[thought_id] = kept
    return found

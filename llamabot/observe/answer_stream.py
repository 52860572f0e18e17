"""The final answer as it is written: decode a terminal tool's answer argument from streamed tool-call pieces.

An agent's answer usually arrives as the arguments of ``respond_to_user`` (``{"response": "..."}``), written
piece by piece. :class:`AnswerStreams` follows every call a streaming model writes and gives back, piece by
piece, the decoded text of the answer argument (escapes resolved) of the calls that deliver an answer. Pure: no
I/O, no run; the JSON is read by pydantic-core's partial parser (``allow_partial="trailing-strings"``), never by
hand and never evaluated.

Cost: the buffer of a call is re-read only after it grew by an eighth since the last read (and once at the end),
so decoding an answer of ``n`` characters reads O(n) characters in all, however small the pieces are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_core import from_json

from llamabot.observe.hooks import ToolCallDelta

#: Read a call's buffer again once it grew by this fraction (or by MIN_STEP characters, if more).
GROWTH = 8
MIN_STEP = 1


class PartialOutput:
    """A typed answer as written so far (``value``: the JSON read so far, not yet validated: the last strings may be
    cut short, fields missing)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


class AnswerStream:
    """The answer argument of one tool call being written. ``answers`` maps tool names to the argument that
    holds their answer; ``name`` is the call's tool when known (``None``: a document that names it)."""

    __slots__ = ("answers", "name", "document", "text", "pending", "size", "read_at", "sent", "last")

    def __init__(self, answers: Mapping[str, str], name: str | None, document: bool):
        self.answers, self.name, self.document = answers, name, document
        self.text = ""  # the call so far, as of the last read
        self.pending: list[str] = []  # pieces since then
        self.size = 0  # characters of the call so far
        self.read_at = 0  # ... at the last read
        self.sent = 0  # characters of the answer already given back
        self.last: PartialOutput | None = None  # a typed answer: the value last given back

    def feed(self, text: str) -> str | PartialOutput:
        """Add the next piece of the call; the answer text that became known (often ``""``), or for a typed
        answer the value written so far when it changed."""
        self.pending.append(text)
        self.size += len(text)
        if self.size - self.read_at < max(MIN_STEP, self.read_at // GROWTH):
            return ""
        return self._read()

    def finish(self) -> str | PartialOutput:
        """The rest of the answer, once the call is complete."""
        return self._read()

    def _read(self) -> str | PartialOutput:
        if self.pending:
            self.text += "".join(self.pending)
            self.pending.clear()
        self.read_at = self.size
        value = self._answer(self.text)
        if not isinstance(value, str):  # a typed answer (an object, a list, a number): the value so far, if new
            if value is None or (self.last is not None and self.last.value == value):
                return ""
            self.last = PartialOutput(value)
            return self.last
        if len(value) <= self.sent:
            return ""
        piece, self.sent = value[self.sent:], len(value)
        return piece

    def _answer(self, text: str) -> Any:
        try:
            parsed = from_json(text, allow_partial="trailing-strings")
        except ValueError:  # nothing readable yet (an empty or cut-off prefix), or not JSON at all
            return None
        if not isinstance(parsed, dict):
            return None
        name = self.name
        if self.document:
            name = parsed.get("name")
            parsed = parsed.get("arguments")
            if not isinstance(name, str) or not isinstance(parsed, dict):
                return None
        argument = self.answers.get(name) if name is not None else None
        return parsed.get(argument) if argument is not None else None


class AnswerStreams:
    """Every tool call being written in a run: ``feed(span_id, delta)`` gives the answer text each piece adds;
    ``finish(span_id)`` the rest once that model call ended (and forgets its calls)."""

    __slots__ = ("answers", "calls")

    def __init__(self, answers: Mapping[str, str]):
        self.answers = answers
        self.calls: dict[int, dict[int, AnswerStream]] = {}

    def feed(self, span_id: int, delta: ToolCallDelta) -> str | PartialOutput:
        calls = self.calls.setdefault(span_id, {})
        stream = calls.get(delta.index)
        if stream is None:
            stream = calls[delta.index] = AnswerStream(self.answers, delta.name, delta.document)
        elif delta.name and stream.name is None:
            stream.name = delta.name
        return stream.feed(delta.text)

    def finish(self, span_id: int) -> list[str | PartialOutput]:
        calls = self.calls.pop(span_id, None)
        return [stream.finish() for _, stream in sorted(calls.items())] if calls else []

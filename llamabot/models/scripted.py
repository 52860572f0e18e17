"""A deterministic scripted model for tests, notebooks without a model, benchmarks and replay.

It answers from a queue of replies (text, tool calls, JSON), or from a responder function of the request.
It records every request it receives (``model.requests``) so tests can assert on prompts. It can simulate
latency (``latency_s``, or per reply with :func:`delayed`), errors (queue an exception) and malformed output
(:func:`malformed_tool_call`, :func:`text` with broken JSON, :func:`empty`).

Replay: ``ScriptedModel.replay(trace)`` answers with the replies recorded in a trace, in order, so any real
run becomes an offline regression test.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from llamabot.errors import ScriptedModelExhausted
from llamabot.models.base import TokenCallback
from llamabot.models.messages import check_tool_call_answers
from llamabot.models.reply import ModelReply, ModelRequest, ToolCallRequest, Usage
from llamabot.observe.hooks import ToolCallDelta

Responder = Callable[[ModelRequest], Any]
ScriptItem = Union[ModelReply, str, BaseException, Responder, "Delayed"]

_call_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Delayed:
    """A scripted item answered after ``seconds`` of simulated latency."""

    item: Any
    seconds: float


def text(content: str) -> ModelReply:
    """A plain text reply."""
    return ModelReply(content=content, finish_reason="stop")


def json_reply(value: Any) -> ModelReply:
    """A reply whose text is ``value`` as JSON (what a structured-output call returns)."""
    return ModelReply(content=json.dumps(value), finish_reason="stop")


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, /, **kwargs: Any) -> ModelReply:
    """A reply with one tool call. ``arguments`` may be a dict, raw JSON text, or given as keywords."""
    return tool_calls((name, arguments if arguments is not None else kwargs))


def tool_calls(*calls: tuple[str, dict[str, Any] | str]) -> ModelReply:
    """A reply with several tool calls, given as ``(name, arguments)`` pairs."""
    return ModelReply(
        content=None,
        tool_calls=tuple(
            ToolCallRequest(f"call_{next(_call_ids)}", name, args if isinstance(args, str) else json.dumps(args))
            for name, args in calls
        ),
        finish_reason="tool_calls",
    )


def malformed_tool_call(name: str, raw_arguments: str = '{"broken": ') -> ModelReply:
    """A tool call whose arguments are not valid JSON."""
    return tool_calls((name, raw_arguments))


def empty() -> ModelReply:
    """A reply with neither text nor tool calls."""
    return ModelReply(content=None, finish_reason="stop")


def delayed(item: Any, seconds: float) -> Delayed:
    """Answer ``item`` after ``seconds`` (sleeps in sync calls, ``asyncio.sleep`` in async ones)."""
    return Delayed(item, seconds)


def _approx_tokens(messages: list[dict[str, Any]]) -> int:
    """About four characters per token over the message texts, plus four per message."""
    chars = 0
    for message in messages:
        content = message.get("content")
        if content:
            chars += len(content)
    return chars // 4 + 4 * len(messages)


def _approx_usage(reply: ModelReply, request: ModelRequest) -> Usage:
    """The usage of a scripted reply that states none: the request's text (and twenty tokens a tool schema) in,
    the reply's text and calls out, at about four characters a token, and no cost. Cheap, because the scripted
    model is what benchmarks measure the framework with, so its own cost must stay negligible."""
    completion = len(reply.content or "")
    for call in reply.tool_calls:
        completion += len(call.arguments) + len(call.name)
    tools = request.tools
    return Usage(_approx_tokens(request.messages) + (20 * len(tools) if tools else 0), completion // 4 + 1, 0.0)


def _stream(reply: ModelReply, on_token: TokenCallback) -> None:
    """Stream a reply as a provider would: its text word by word, then each tool call's arguments in pieces of a
    few characters (the name with the first piece)."""
    if reply.content:
        words = reply.content.split(" ")
        for index, word in enumerate(words):
            on_token(word if index == len(words) - 1 else word + " ")
    for index, call in enumerate(reply.tool_calls):
        arguments = call.arguments
        for start in range(0, max(len(arguments), 1), STREAM_PIECE):
            on_token(ToolCallDelta(index, call.name if start == 0 else None, arguments[start:start + STREAM_PIECE]))


#: Characters per streamed piece of a scripted tool call's arguments.
STREAM_PIECE = 4


class ScriptedModel:
    """A chat model that answers from a script. Use directly as ``model_name=ScriptedModel(...)``.

    ``replies``: queued items, answered first in, first out. Each item is a :class:`ModelReply` (see the
    helper functions), a string (text reply), an exception (raised), a responder ``f(request) -> item`` or a
    :class:`Delayed` item. ``responder``: answers when the queue is empty (for unbounded or concurrent use).
    ``latency_s``: simulated latency of every call. ``strict`` (default): every request must satisfy the OpenAI
    rule that each assistant tool call is answered by a ``tool`` message before the next turn (strict providers
    reject it otherwise), else :class:`UnansweredToolCallError` - so every test on the scripted model checks it.
    """

    def __init__(
        self,
        replies: Iterable[ScriptItem] = (),
        *,
        responder: Responder | None = None,
        latency_s: float = 0.0,
        name: str = "scripted",
        record: bool = True,
        strict: bool = True,
    ):
        self.name = name
        self.strict = strict
        self.latency_s = latency_s
        self.responder = responder
        self.record = record
        self._queue: deque[Any] = deque(replies)
        self.requests: list[ModelRequest] = []

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self.name!r}, queued={len(self._queue)}, requests={len(self.requests)})"

    def queue(self, *items: ScriptItem) -> ScriptedModel:
        """Append replies to the script; returns the model for chaining."""
        self._queue.extend(items)
        return self

    @property
    def remaining(self) -> int:
        return len(self._queue)

    @classmethod
    def replay(cls, trace: Any, **kwargs: Any) -> ScriptedModel:
        """A model that answers with the replies recorded in ``trace`` (a Trace, dict, JSON text or path)."""
        from llamabot.observe.tracing import Trace

        if not isinstance(trace, Trace):
            trace = Trace.load(trace if not isinstance(trace, Path) else str(trace))
        replies = [ModelReply.from_dict(r) for r in trace.model_replies()]
        return cls(replies, name=kwargs.pop("name", "replay"), **kwargs)

    # -- one logic for both twins: pick the item, then turn it into a reply --------------------------

    def _next(self, request: ModelRequest) -> tuple[Any, float]:
        if self.strict:
            check_tool_call_answers(request.messages)
        if self.record:
            self.requests.append(request)
        if self._queue:
            item = self._queue.popleft()
        elif self.responder is not None:
            item = self.responder
        else:
            raise ScriptedModelExhausted(
                f"{self.name}: no scripted reply left for request #{len(self.requests)} "
                f"(last user message: {request.last_user_text[:120]!r}); queue more replies or set responder="
            )
        delay = self.latency_s
        while type(item) is not ModelReply:
            if isinstance(item, Delayed):
                delay, item = item.seconds, item.item
            elif callable(item) and not isinstance(item, (ModelReply, BaseException, type)):
                item = item(request)
            else:
                break
        return item, delay

    def _reply(self, item: Any, delay: float, request: ModelRequest, on_token: TokenCallback | None) -> ModelReply:
        """The reply to ``request`` for the scripted ``item``: its content and calls, this model's name, the
        simulated latency and, when the item carries no usage, an estimate (a few lines on every call of every
        benchmark, so kept cheap)."""
        if type(item) is not ModelReply:
            item = self._other(item)
        usage = item.usage
        if not (usage.prompt_tokens or usage.completion_tokens):
            usage = _approx_usage(item, request)
        if on_token is not None:
            _stream(item, on_token)
        return ModelReply(item.content, item.tool_calls, usage, self.name, item.finish_reason, delay)

    def _other(self, item: Any) -> ModelReply:
        """A scripted item that is not a plain :class:`ModelReply`: raise it (an exception or its class), or
        the reply it stands for (a string, a ``ModelReply`` subclass)."""
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, type) and issubclass(item, BaseException):
            raise item(f"{self.name}: scripted error")
        if isinstance(item, str):
            return text(item)
        if isinstance(item, ModelReply):
            return item
        raise TypeError(f"{self.name}: a scripted item must be a ModelReply, str or exception, got {item!r}")

    def complete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
        item, delay = self._next(request)
        if delay:
            time.sleep(delay)
        return self._reply(item, delay, request, on_token)

    async def acomplete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
        item, delay = self._next(request)
        if delay:
            await asyncio.sleep(delay)
        return self._reply(item, delay, request, on_token)

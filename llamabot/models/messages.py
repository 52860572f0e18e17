"""Chat messages in the OpenAI format, the lingua franca of the model seam. Pure."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from llamabot.models.reply import ToolCallRequest, Usage

Message = dict[str, Any]


def system(content: str) -> Message:
    return {"role": "system", "content": content}


def user(content: str) -> Message:
    return {"role": "user", "content": content}


def assistant(content: str | None, tool_calls: tuple[ToolCallRequest, ...] = ()) -> Message:
    """An assistant turn; with ``tool_calls`` it carries them in the OpenAI shape."""
    message: Message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = list(map(ToolCallRequest.to_message, tool_calls))
    return message


def tool_result(tool_call_id: str, name: str, content: Any) -> Message:
    """The ``tool``-role message answering one tool call (its ``tool_call_id``)."""
    if type(content) in (int, float):
        content = repr(content)  # what json.dumps gives for finite numbers, without its overhead
    elif not isinstance(content, str):
        try:
            content = json.dumps(content, default=str)
        except (TypeError, ValueError):
            content = repr(content)
    return {"role": "tool", "tool_call_id": tool_call_id, "name": name, "content": content}


def to_messages(items: tuple[Any, ...] | list[Any]) -> list[Message]:
    """Normalise what a user passes to a bot: strings become user messages; dicts and objects with
    ``to_message()`` pass through; lists are flattened."""
    out: list[Message] = []
    for item in items:
        if isinstance(item, str):
            out.append(user(item))
        elif isinstance(item, dict):
            if "role" not in item:
                raise ValueError(f"a chat message needs a 'role': {item!r}")
            out.append(item)
        elif isinstance(item, (list, tuple)):
            out.extend(to_messages(item))
        elif hasattr(item, "to_message"):
            out.append(item.to_message())
        else:
            raise TypeError(f"cannot use {type(item).__name__} as a chat message; pass a str or a message dict")
    return out


@dataclass(slots=True)
class AIMessage:
    """What a bot answered: the text, plus usage of the call."""

    content: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    def __str__(self) -> str:
        return self.content

    def to_message(self) -> Message:
        return {"role": "assistant", "content": self.content}


class UnansweredToolCallError(ValueError):
    """A conversation breaks the OpenAI rule: an assistant tool call has no ``tool`` answer before the next
    turn (strict providers reject such a request)."""


def check_tool_call_answers(messages: list[Message]) -> None:
    """Raise :class:`UnansweredToolCallError` unless every assistant tool call is answered by a ``tool`` message
    (with its id) among the messages that directly follow it, and every ``tool`` message answers such a call."""
    open_ids: dict[str, int] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in open_ids:
                raise UnansweredToolCallError(
                    f"message {index}: tool result {message.get('tool_call_id')!r} answers no open tool call")
            del open_ids[message["tool_call_id"]]
            continue
        if open_ids:
            raise UnansweredToolCallError(
                f"message {index} ({role}) follows tool calls with no answer: {sorted(open_ids)} "
                f"(asked in message {min(open_ids.values())})")
        if role == "assistant":
            open_ids = {call["id"]: index for call in message.get("tool_calls") or ()}
    if open_ids:
        raise UnansweredToolCallError(f"the conversation ends with unanswered tool calls: {sorted(open_ids)}")

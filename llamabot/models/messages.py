"""Chat messages in the OpenAI format, the lingua franca of the model seam. Pure."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

from llamabot.errors import RUN_ENDING, ToolResultError, excerpt
from llamabot.models.reply import ToolCallRequest, Usage
from llamabot.settings import SETTINGS, setting

Message = dict[str, Any]

#: How many characters of a tool's result the model is shown, unless ``$LLAMABOT_TOOL_RESULT_CHARS`` says.
TOOL_RESULT_CHARS = SETTINGS["LLAMABOT_TOOL_RESULT_CHARS"].default


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
    """The ``tool``-role message answering one tool call (its ``tool_call_id``): ``content`` as the model is
    shown it (see :func:`tool_result_text`; raises :class:`ToolResultError` when it cannot be shown)."""
    return {"role": "tool", "tool_call_id": tool_call_id, "name": name, "content": tool_result_text(content, name)}


@functools.cache
def tool_result_chars() -> int:
    """At most how many characters of a tool's result the model is shown: ``$LLAMABOT_TOOL_RESULT_CHARS`` (a
    whole number from 100; see :data:`llamabot.settings.SETTINGS`). Read once, on first use
    (``tool_result_chars.cache_clear()`` reads it again)."""
    return setting("LLAMABOT_TOOL_RESULT_CHARS")


def tool_result_text(content: Any, tool: str, limit: int | None = None) -> str:
    """What the model is shown of tool ``tool``'s result ``content``: a str as it is, numbers as ``repr``, other
    values as JSON (``str`` for what JSON cannot hold; ``repr`` when that fails too); cut to at most ``limit``
    characters (default :func:`tool_result_chars`), the marker ``... [truncated: N characters, showing the first
    K]`` included. The caller keeps the whole value.

    Raises :class:`ToolResultError` naming the tool when the value cannot be made text at all (its ``__str__``
    and ``__repr__`` raise, or it nests too deeply): the call failed, and the model is told so.
    """
    if isinstance(content, str):
        text = content
    elif type(content) in (int, float):
        text = repr(content)  # what json.dumps gives for finite numbers, without its overhead
    else:
        text = _as_text(content, tool)
    if limit is None:
        limit = tool_result_chars()
    if len(text) <= limit:
        return text
    # the marker fits within the limit, so text cut once is never cut again (tool_result of a shown text)
    keep = limit - len(_cut_marker(len(text), limit))
    return text[:keep] + _cut_marker(len(text), keep)


def _cut_marker(length: int, kept: int) -> str:
    return f"... [truncated: {length} characters, showing the first {kept}]"


def _as_text(content: Any, tool: str) -> str:
    """``content`` as JSON, else its ``repr``; :class:`ToolResultError` when both raise."""
    try:
        return json.dumps(content, default=str)
    except RUN_ENDING:
        raise
    except BaseException:  # noqa: BLE001 - a value's own __str__ may raise anything; its repr may still work
        pass
    try:
        return repr(content)
    except RUN_ENDING:
        raise
    except BaseException as exc:  # noqa: BLE001 - and so may its __repr__
        raise ToolResultError(tool, type(content), exc) from exc


def to_messages(items: tuple[Any, ...] | list[Any]) -> list[Message]:
    """Normalise what a user passes to a bot: strings become user messages; message dicts (a str ``role``, a
    ``content`` that is a str, a list of content parts or None) and objects with ``to_message()`` pass through;
    lists are flattened. Anything else (None, bytes...) raises ``TypeError`` naming its type and position."""
    out: list[Message] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            out.append(user(item))
        elif isinstance(item, dict):
            out.append(_checked_message(item, index))
        elif isinstance(item, (list, tuple)):
            out.extend(to_messages(item))
        elif hasattr(item, "to_message"):
            out.append(item.to_message())
        else:
            raise TypeError(
                f"message {index}: cannot use a {type(item).__name__} as a chat message; pass a str (a user "
                "message) or a message dict such as {'role': 'user', 'content': '...'}"
            )
    return out


def _checked_message(message: dict[str, Any], index: int) -> Message:
    if "role" not in message:
        raise ValueError(f"message {index}: a chat message needs a 'role': {excerpt(message)}")
    role, content = message["role"], message.get("content")
    if not isinstance(role, str):
        raise TypeError(f"message {index}: the 'role' must be a str, not a {type(role).__name__}")
    if content is not None and not isinstance(content, (str, list)):
        raise TypeError(
            f"message {index} ({role}): the 'content' must be a str, a list of content parts or None, not a "
            f"{type(content).__name__}"
        )
    return message


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

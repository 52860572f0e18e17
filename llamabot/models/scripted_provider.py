"""The scripted model behind LiteLLM: register a :class:`ScriptedModel` as a LiteLLM custom provider, so a
plain model string (``"scripted/anything"``) reaches it through ``litellm.completion`` (streaming too: text
word by word, tool calls in pieces). Used to test the LiteLLM path offline (CLI, services) and to measure
LiteLLM's own cost next to the framework's.

Importing this module imports LiteLLM.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from litellm import CustomLLM
from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message, ModelResponse
from litellm.types.utils import Usage as LiteLLMUsage

from llamabot.models.litellm_model import ensure_litellm, register_zero_cost
from llamabot.models.reply import ModelReply, ModelRequest
from llamabot.models.scripted import ScriptedModel


def _response(reply: ModelReply, model: str) -> ModelResponse:
    calls = [
        ChatCompletionMessageToolCall(id=c.id, type="function", function=Function(name=c.name, arguments=c.arguments))
        for c in reply.tool_calls
    ] or None
    return ModelResponse(
        id=f"scripted-{uuid.uuid4().hex[:8]}",
        created=int(time.time()),
        model=model,
        choices=[
            Choices(
                index=0,
                message=Message(content=reply.content, role="assistant", tool_calls=calls),
                finish_reason=reply.finish_reason or ("tool_calls" if calls else "stop"),
            )
        ],
        usage=LiteLLMUsage(
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
            total_tokens=reply.usage.total_tokens,
        ),
    )


class ScriptedProvider(CustomLLM):
    """A LiteLLM custom provider that answers with a :class:`ScriptedModel`."""

    def __init__(self, model: ScriptedModel):
        super().__init__()
        self.model = model

    def _request(self, model: str, messages: list, optional_params: dict | None) -> ModelRequest:
        params = dict(optional_params or {})
        return ModelRequest(
            model=model,
            messages=messages,
            tools=params.pop("tools", None),
            tool_choice=params.pop("tool_choice", None),
            response_format=params.pop("response_format", None),
            params=params,
        )

    def completion(self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any) -> ModelResponse:
        return _response(self.model.complete(self._request(model, messages, optional_params)), model)

    async def acompletion(self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any) -> ModelResponse:
        return _response(await self.model.acomplete(self._request(model, messages, optional_params)), model)

    def streaming(self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield from _chunks(self.model.complete(self._request(model, messages, optional_params)))

    async def astreaming(self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        for piece in _chunks(await self.model.acomplete(self._request(model, messages, optional_params))):
            yield piece


#: Characters per streamed piece of a tool call's arguments.
STREAM_PIECE = 4


def _chunks(reply: ModelReply) -> Iterator[dict[str, Any]]:
    """The reply as LiteLLM GenericStreamingChunks: its text word by word, then each tool call's arguments in
    pieces (id and name with the first), then the finish with the usage."""
    def chunk(text: str = "", tool_use: dict[str, Any] | None = None, finish: str = "", usage: Any = None):
        return {"text": text, "tool_use": tool_use, "is_finished": bool(finish), "finish_reason": finish,
                "usage": usage, "index": 0}

    if reply.content:
        words = reply.content.split(" ")
        for index, word in enumerate(words):
            yield chunk(word if index == len(words) - 1 else word + " ")
    for index, call in enumerate(reply.tool_calls):
        for start in range(0, max(len(call.arguments), 1), STREAM_PIECE):
            first = start == 0
            yield chunk(tool_use={"id": call.id if first else None, "type": "function", "index": index,
                                  "function": {"name": call.name if first else None,
                                               "arguments": call.arguments[start:start + STREAM_PIECE]}})
    usage = reply.usage
    yield chunk(finish=reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"),
                usage={"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                       "total_tokens": usage.total_tokens})


def register_scripted_provider(model: ScriptedModel, prefix: str = "scripted", zero_cost: bool = True) -> str:
    """Register ``model`` with LiteLLM under ``prefix`` and return a model string that reaches it.

    An existing entry for ``prefix`` is replaced only if it is a :class:`ScriptedProvider` (one we added);
    a provider someone else registered under that name is never overwritten: a ``ValueError`` says so.
    With ``zero_cost`` the model string is registered with zero cost, which spares LiteLLM's cost look-ups.
    """
    litellm = ensure_litellm()
    entries = list(litellm.custom_provider_map or [])
    for index, entry in enumerate(entries):
        if entry.get("provider") == prefix:
            if not isinstance(entry.get("custom_handler"), ScriptedProvider):
                raise ValueError(f"a LiteLLM custom provider named {prefix!r} is already registered by someone else")
            entries[index] = {"provider": prefix, "custom_handler": ScriptedProvider(model)}
            break
    else:
        entries.append({"provider": prefix, "custom_handler": ScriptedProvider(model)})
    litellm.custom_provider_map = entries
    litellm.utils.custom_llm_setup()
    name = f"{prefix}/{model.name}"
    if zero_cost:
        register_zero_cost(litellm, [name], prefix)
    return name

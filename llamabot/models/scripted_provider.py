"""The scripted model behind LiteLLM: register a :class:`ScriptedModel` as a LiteLLM custom provider, so a
plain model string (``"scripted/anything"``) reaches it through ``litellm.completion``. Used to test the
LiteLLM path offline (CLI, services) and to measure LiteLLM's own cost next to the framework's.

Importing this module imports LiteLLM.
"""

from __future__ import annotations

import time
import uuid
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

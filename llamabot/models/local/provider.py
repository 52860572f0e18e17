"""The embedded model as a LiteLLM custom provider, registered under ``local/`` (``litellm.completion(model=
"local/qwen2.5-coder-1.5b", ...)`` works for users who call LiteLLM themselves).

llamabot's own bots do not come through here: the seam hands ``local/`` models to
:class:`~llamabot.models.local.model.LocalModel`, which drives the same :class:`LocalEngine` without LiteLLM's
per-chunk stream wrapper. What both share lives in ``runtime`` (loading, settings, caches) and
``engine`` (prompt, prefix reuse, grammar-constrained tool calls and ``response_format``, generation).

This module imports LiteLLM; it is only imported when LiteLLM needs the provider.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError
from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message, ModelResponse
from litellm.types.utils import Usage as LiteLLMUsage

from llamabot.models.local.engine import (
    DEFAULT_MAX_TOKENS,
    TOOL_CALL_OPEN,
    Generation,
    GenerationRun,
    LocalEngine,
    LocalGenerationError,
    drive,
)
from llamabot.models.local.model import local_alias
from llamabot.models.local.runtime import LoadedModel, loaded_model
from llamabot.models.registry import LOCAL_PREFIX


def to_model_response(generation: Generation, model: str) -> ModelResponse:
    tool_calls = [
        ChatCompletionMessageToolCall(
            id=f"call_{uuid.uuid4().hex[:12]}", type="function", function=Function(name=n, arguments=a)
        )
        for n, a in generation.tool_calls
    ] or None
    message = Message(content=generation.content, role="assistant", tool_calls=tool_calls)
    return ModelResponse(
        model=f"{LOCAL_PREFIX}/{local_alias(model)}",
        choices=[Choices(index=0, message=message, finish_reason=generation.finish_reason)],
        usage=LiteLLMUsage(
            prompt_tokens=generation.prompt_tokens,
            completion_tokens=generation.completion_tokens,
            total_tokens=generation.prompt_tokens + generation.completion_tokens,
        ),
    )


def _chunk(
    text: str = "", *, tool_use: dict[str, Any] | None = None, finish: str = "", usage: Any = None
) -> dict[str, Any]:
    """A LiteLLM GenericStreamingChunk."""
    return {
        "text": text,
        "is_finished": bool(finish),
        "finish_reason": finish,
        "usage": usage,
        "index": 0,
        "tool_use": tool_use,
    }


def _chunks(run: GenerationRun) -> Iterator[dict[str, Any]]:
    """The generation's pieces as GenericStreamingChunk dicts as they are made, then its tool calls and usage."""
    try:
        while True:
            try:
                piece = next(run)
            except StopIteration as done:
                generation: Generation = done.value
                break
            if type(piece) is str:  # a forced call's pieces (ToolCallDelta) arrive whole as tool_use below
                yield _chunk(piece)
    except LocalGenerationError as exc:
        raise CustomLLMError(status_code=500, message=str(exc)) from exc
    finally:
        run.close()
    for index, (name, arguments) in enumerate(generation.tool_calls):
        yield _chunk(
            tool_use={
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
                "index": index,
            }
        )
    yield _chunk(
        finish=generation.finish_reason,
        usage={
            "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": generation.completion_tokens,
            "total_tokens": generation.prompt_tokens + generation.completion_tokens,
        },
    )


class LocalProvider(CustomLLM):
    """LiteLLM custom provider for ``local/<alias or path to .gguf>``."""

    def _run(self, model: str, messages: list, optional_params: dict | None, stream: bool) -> GenerationRun:
        engine = LocalEngine(loaded_model(local_alias(model)))
        return engine.run(messages, optional_params or {}, stream)

    def completion(
        self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any
    ) -> ModelResponse:
        started = time.perf_counter()
        try:
            generation = drive(self._run(model, messages, optional_params, False))
        except LocalGenerationError as exc:
            raise CustomLLMError(status_code=500, message=str(exc)) from exc
        response = to_model_response(generation, model)
        response._response_ms = (time.perf_counter() - started) * 1000
        return response

    async def acompletion(
        self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any
    ) -> ModelResponse:
        return await asyncio.to_thread(self.completion, model, messages, optional_params=optional_params)

    def streaming(
        self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any
    ) -> Iterator[dict[str, Any]]:
        yield from _chunks(self._run(model, messages, optional_params, True))

    async def astreaming(
        self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        iterator = self.streaming(model, messages, optional_params=optional_params)
        sentinel = object()
        while (chunk := await asyncio.to_thread(next, iterator, sentinel)) is not sentinel:
            yield chunk


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "TOOL_CALL_OPEN",
    "LocalEngine",
    "LocalProvider",
    "LoadedModel",
    "litellm",
    "loaded_model",
    "to_model_response",
]

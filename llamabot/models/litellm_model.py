"""Models reached through LiteLLM: any provider's model string, plus the embedded ``local/`` provider.

LiteLLM is imported here, lazily, on the first model call (it costs about 3 s). ``ensure_litellm`` also
registers the embedded provider in ``litellm.custom_provider_map`` under ``local`` (never replacing an entry
someone else added) and registers the local models with zero cost, which spares LiteLLM its cost look-ups.

Whatever a provider raises (an API error, a connection error, a malformed response) reaches the caller as
:class:`~llamabot.errors.ModelCallError` naming the model, with the provider's exception kept as ``__cause__``;
cancellation and other base exceptions pass through untouched, and so do llamabot's own errors.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from llamabot.models.base import StringModel, TokenCallback, provider_errors
from llamabot.models.registry import LOCAL_MODELS, LOCAL_PREFIX
from llamabot.models.reply import ModelReply, ModelRequest, ToolCallRequest, Usage
from llamabot.observe.hooks import ToolCallDelta

_setup_lock = threading.Lock()
_litellm: Any = None


def ensure_litellm() -> Any:
    """Import LiteLLM once and register the embedded ``local/`` provider with it. Returns the module."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _setup_lock:
        if _litellm is not None:
            return _litellm
        import litellm

        from llamabot.models.local.provider import LocalProvider

        providers = list(litellm.custom_provider_map or [])
        if not any(entry.get("provider") == LOCAL_PREFIX for entry in providers):
            providers.append({"provider": LOCAL_PREFIX, "custom_handler": LocalProvider()})
            litellm.custom_provider_map = providers
        litellm.utils.custom_llm_setup()
        register_zero_cost(litellm, [spec.model_name for spec in LOCAL_MODELS.values()], LOCAL_PREFIX)
        _litellm = litellm
        return litellm


def register_zero_cost(litellm: Any, model_names: list[str], provider: str) -> None:
    """Tell LiteLLM these models cost nothing, so it skips its cost-map misses for them."""
    litellm.register_model(
        {
            name: {
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
                "cache_creation_input_token_cost": 0.0,
                "cache_read_input_token_cost": 0.0,
                "litellm_provider": provider,
                "mode": "chat",
            }
            for name in model_names
        }
    )


class LiteLLMModel(StringModel):
    """A chat model reached through ``litellm.completion`` / ``litellm.acompletion``."""

    def _kwargs(self, request: ModelRequest, stream: bool) -> dict[str, Any]:
        kwargs = request.call_params(self.defaults)
        kwargs["model"] = self.model_string
        kwargs["messages"] = request.messages
        if stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    def complete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
        litellm = ensure_litellm()
        started = time.perf_counter()
        kwargs = self._kwargs(request, stream=on_token is not None)
        where = model_and_server(self.model_string, kwargs)
        if on_token is None:
            with provider_errors(where):
                return reply_from_litellm(litellm.completion(**kwargs), time.perf_counter() - started)
        with provider_errors(where):
            stream = iter(litellm.completion(**kwargs))
        chunks = []
        while (chunk := _next_chunk(where, stream)) is not _END:
            chunks.append(chunk)
            _emit(chunk, on_token)  # not inside provider_errors: a hook's error is its own
        return self._streamed(litellm, chunks, request, started, where)

    def _assemble(self, litellm: Any, chunks: list[Any], request: ModelRequest) -> Any:
        """Rebuild one response from stream chunks. Custom providers' chunks name the model without its
        prefix, which LiteLLM then cannot route; give them the full model string."""
        prefix = self.model_string.split("/", 1)[0]
        if prefix in getattr(litellm, "_custom_providers", ()):
            for chunk in chunks:
                chunk.model = self.model_string
        return litellm.stream_chunk_builder(chunks, messages=request.messages)

    async def acomplete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
        litellm = ensure_litellm()
        started = time.perf_counter()
        kwargs = self._kwargs(request, stream=on_token is not None)
        where = model_and_server(self.model_string, kwargs)
        if on_token is None:
            with provider_errors(where):
                return reply_from_litellm(await litellm.acompletion(**kwargs), time.perf_counter() - started)
        with provider_errors(where):
            stream = (await litellm.acompletion(**kwargs)).__aiter__()
        chunks = []
        while (chunk := await _anext_chunk(where, stream)) is not _END:
            chunks.append(chunk)
            _emit(chunk, on_token)
        return self._streamed(litellm, chunks, request, started, where)

    def _streamed(self, litellm: Any, chunks: list[Any], request: ModelRequest, started: float,
                  where: str) -> ModelReply:
        with provider_errors(where):
            return reply_from_litellm(self._assemble(litellm, chunks, request), time.perf_counter() - started)


_END = object()


def _next_chunk(model: str, stream: Iterator[Any]) -> Any:
    with provider_errors(model):
        return next(stream, _END)


async def _anext_chunk(model: str, stream: AsyncIterator[Any]) -> Any:
    with provider_errors(model):
        return await anext(stream, _END)


def model_and_server(model: str, kwargs: dict[str, Any]) -> str:
    """``model``, with the server a call goes to when it names one (``api_base``; any user and password in the
    URL left out), so that an error says which server failed: ``openai/qwen (http://127.0.0.1:8000/v1)``."""
    base = kwargs.get("api_base") or kwargs.get("base_url")
    if not base:
        return model
    parts = urlsplit(str(base))
    return f"{model} ({urlunsplit(parts._replace(netloc=parts.netloc.rpartition('@')[2], query='', fragment=''))})"


def _emit(chunk: Any, on_token: TokenCallback) -> None:
    """Hand a stream chunk's text, and the pieces of the tool calls it continues, to ``on_token``."""
    choices = getattr(chunk, "choices", None) or []
    if choices:
        delta = choices[0].delta
        text = getattr(delta, "content", None)
        if text:
            on_token(text)
        for call in getattr(delta, "tool_calls", None) or ():
            function = getattr(call, "function", None)
            arguments = getattr(function, "arguments", None) or ""
            name = getattr(function, "name", None)
            if arguments or name:
                on_token(ToolCallDelta(getattr(call, "index", 0) or 0, name, arguments))


def reply_from_litellm(response: Any, latency_s: float) -> ModelReply:
    """Convert a LiteLLM ``ModelResponse`` into a :class:`ModelReply`."""
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCallRequest(
            id=call.id or f"call_{uuid.uuid4().hex[:12]}",  # unique in the conversation, like the provider's own
            name=call.function.name or "",
            arguments=call.function.arguments or "",
        )
        for call in getattr(message, "tool_calls", None) or []
    )
    usage = getattr(response, "usage", None)
    hidden = getattr(response, "_hidden_params", None) or {}
    return ModelReply(
        content=message.content,
        tool_calls=calls,
        usage=Usage(
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            cost=hidden.get("response_cost"),
        ),
        model=getattr(response, "model", "") or "",
        finish_reason=choice.finish_reason,
        latency_s=latency_s,
    )

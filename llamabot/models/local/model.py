"""The embedded model as a chat model of the seam: ``local/<alias or path.gguf>`` without LiteLLM in the way.

``get_model("local/...")`` returns a :class:`LocalModel`. It drives :class:`LocalEngine` directly: streamed tokens
reach ``on_token`` straight from llama.cpp's generator (sync: in the calling thread; async: from a worker thread,
handed to the event loop as they come), at llama.cpp's own speed. LiteLLM's per-chunk stream wrapper, which ran
in the same process and competed with llama.cpp's threads, is not on this path, and LiteLLM is not imported.

The seam's contract is kept: a :class:`ModelReply` with usage (cost 0), tool calls with fresh ids, finish
reason and latency; whatever the provider raises reaches the caller as :class:`ModelCallError` naming the model
(llamabot's own errors, such as a missing model file, pass through). ``litellm.completion(model="local/...")``
keeps working through :class:`llamabot.models.local.LocalProvider`, on the same engine.
"""

from __future__ import annotations

import time
import uuid

from llamabot.models.base import StringModel, TokenCallback, provider_errors
from llamabot.models.local.engine import Generation, GenerationRun, LocalEngine, adrive, drive
from llamabot.models.local.runtime import loaded_model
from llamabot.models.registry import LOCAL_PREFIX
from llamabot.models.reply import ModelReply, ModelRequest, ToolCallRequest, Usage


def local_alias(model: str) -> str:
    """What follows ``local/`` (an alias or a GGUF path)."""
    return model.split("/", 1)[1] if model.startswith(f"{LOCAL_PREFIX}/") else model


def to_reply(generation: Generation, model: str, latency_s: float) -> ModelReply:
    """Shape a :class:`Generation` as the seam's :class:`ModelReply`."""
    calls = tuple(
        ToolCallRequest(id=f"call_{uuid.uuid4().hex[:12]}", name=n, arguments=a)
        for n, a in generation.tool_calls
    )
    return ModelReply(
        content=generation.content,
        tool_calls=calls,
        usage=Usage(
            prompt_tokens=generation.prompt_tokens, completion_tokens=generation.completion_tokens, cost=0.0
        ),
        model=f"{LOCAL_PREFIX}/{local_alias(model)}",
        finish_reason=generation.finish_reason,
        latency_s=latency_s,
    )


class LocalModel(StringModel):
    """A chat model on the embedded llama.cpp model ``local/<alias or path.gguf>``."""

    def _generation(self, request: ModelRequest, stream: bool) -> GenerationRun:
        """The engine's generation for ``request``; what it raises becomes ModelCallError naming the model. The
        caller's ``on_token`` runs in the driver, outside this generator, so its own errors stay its own."""
        with provider_errors(self.model_string):
            engine = LocalEngine(loaded_model(local_alias(self.model_string)))
            return (yield from engine.run(request.messages, request.call_params(self.defaults), stream))

    def complete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
        started = time.perf_counter()
        generation = drive(self._generation(request, on_token is not None), on_token)
        return to_reply(generation, self.model_string, time.perf_counter() - started)

    async def acomplete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
        started = time.perf_counter()
        generation = await adrive(lambda: self._generation(request, on_token is not None), on_token)
        return to_reply(generation, self.model_string, time.perf_counter() - started)

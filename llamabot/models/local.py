"""The embedded local provider: llama.cpp in-process, registered with LiteLLM under ``local/``.

- One loaded model per process per file, shared by every bot (``loaded_model``); calls are serialised with a
  lock because llama.cpp is not thread-safe; async calls run in a worker thread so the event loop never
  blocks; every model is closed at interpreter exit.
- The prompt is rendered with the GGUF's own chat template, tools included.
- A required tool call (``tool_choice="required"`` or a named function) is generated under a grammar compiled
  from the union of the offered tools' argument schemas, so it is valid by construction. With
  ``tool_choice="auto"`` the model writes freely; a ``<tool_call>`` it starts is completed under the grammar.
- ``response_format`` with a JSON schema is enforced by grammar.
- Honoured parameters: ``temperature`` (default 0: greedy, deterministic), ``max_tokens``, ``stop``, ``stream``,
  ``top_p``, ``seed``; the reply carries usage counts.

This module imports LiteLLM and llama.cpp; it is only imported when a model call needs it.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError
from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message, ModelResponse
from litellm.types.utils import Usage as LiteLLMUsage

from llamabot.errors import ModelFileError, excerpt
from llamabot.models.local_grammar import (
    forces_tool_call,
    parse_forced_call,
    response_schema,
    selected_tools,
    template_messages,
    tool_call_schema,
)
from llamabot.models.registry import LOCAL_PREFIX, ensure_model_file
from llamabot.models.tool_call_text import extract_tool_calls

TOOL_CALL_OPEN = "<tool_call>\n"
DEFAULT_MAX_TOKENS = 1024


@dataclass
class LoadedModel:
    """A llama.cpp model, its chat formatter and the lock that serialises calls to it."""

    path: str
    llm: Any
    formatter: Any
    lock: threading.Lock

    def close(self) -> None:
        with self.lock:
            close = getattr(self.llm, "close", None)
            if close is not None:
                close()


_loaded: dict[str, LoadedModel] = {}
_load_lock = threading.Lock()


def loaded_model(name: str) -> LoadedModel:
    """The shared, loaded model for ``name`` (an alias or a GGUF path); loads it on first use."""
    path = str(ensure_model_file(name))
    model = _loaded.get(path)
    if model is not None:
        return model
    with _load_lock:
        model = _loaded.get(path)
        if model is None:
            model = _load(path)
            _loaded[path] = model
    return model


def _load(path: str) -> LoadedModel:
    try:
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ModelFileError('the embedded model needs llama-cpp-python: pip install "llamabot[local]"') from exc
    llm = Llama(
        model_path=path,
        n_ctx=int(os.environ.get("LLAMABOT_LOCAL_N_CTX", "8192")),
        n_threads=int(os.environ.get("LLAMABOT_LOCAL_THREADS", str(os.cpu_count() or 2))),
        verbose=False,
    )
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise ModelFileError(f"{path} has no chat template; the embedded provider needs an instruct model")
    eos = llm._model.token_get_text(llm.token_eos()) if llm.token_eos() != -1 else ""
    bos = llm._model.token_get_text(llm.token_bos()) if llm.token_bos() != -1 else ""
    formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, stop_token_ids=[llm.token_eos()])
    return LoadedModel(path, llm, formatter, threading.Lock())


@atexit.register
def _close_all() -> None:
    for model in list(_loaded.values()):
        try:
            model.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    _loaded.clear()


@lru_cache(maxsize=64)
def _grammar(schema_json: str) -> Any:
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_json_schema(schema_json, verbose=False)


@dataclass
class Generation:
    """What one local call produced, before it is shaped into a LiteLLM response."""

    content: str | None
    tool_calls: list[tuple[str, str]]
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


class LocalEngine:
    """Runs one chat request on a loaded model. Pure orchestration around ``llm.create_completion``."""

    def __init__(self, model: LoadedModel):
        self.model = model

    def _sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        stop = params.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        sampling = {
            "temperature": float(params.get("temperature") if params.get("temperature") is not None else 0.0),
            "max_tokens": int(params.get("max_tokens") or params.get("max_completion_tokens") or DEFAULT_MAX_TOKENS),
            "stop": stop,
        }
        for key in ("top_p", "seed", "top_k", "repeat_penalty"):
            if params.get(key) is not None:
                sampling[key] = params[key]
        return sampling

    def _prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> tuple[str, list[str]]:
        rendered = self.model.formatter(messages=template_messages(messages), tools=tools or None)
        return rendered.prompt, list(rendered.stop or [])

    def _complete(self, prompt: str, stop: list[str], sampling: dict[str, Any], grammar: Any, on_text: Any) -> tuple[str, int, int, str]:
        llm = self.model.llm
        kwargs = {**sampling, "stop": stop + sampling["stop"], "grammar": grammar}
        if on_text is None:
            out = llm.create_completion(prompt, **kwargs)
            choice = out["choices"][0]
            usage = out["usage"]
            return choice["text"], usage["prompt_tokens"], usage["completion_tokens"], choice["finish_reason"] or "stop"
        pieces: list[str] = []
        finish = "stop"
        for chunk in llm.create_completion(prompt, stream=True, **kwargs):
            choice = chunk["choices"][0]
            if choice["text"]:
                pieces.append(choice["text"])
                on_text(choice["text"])
            finish = choice.get("finish_reason") or finish
        text = "".join(pieces)
        prompt_tokens = len(llm.tokenize(prompt.encode(), add_bos=False, special=True))
        completion_tokens = len(llm.tokenize(text.encode(), add_bos=False, special=True)) if text else 0
        return text, prompt_tokens, completion_tokens, finish

    def generate(self, messages: list[dict[str, Any]], params: dict[str, Any], on_text: Any = None) -> Generation:
        tools = params.get("tools") or None
        tool_choice = params.get("tool_choice")
        if tool_choice == "none":
            tools = None
        sampling = self._sampling(params)
        schema = response_schema(params.get("response_format"))
        with self.model.lock:
            prompt, stop = self._prompt(messages, tools)
            if forces_tool_call(tools, tool_choice):
                return self._forced_call(prompt, stop, sampling, selected_tools(tools, tool_choice))
            grammar = _grammar(json.dumps(schema)) if schema is not None else None
            text, p_tok, c_tok, finish = self._complete(prompt, stop, sampling, grammar, on_text)
            if tools and schema is None:
                names = [t.get("function", t).get("name") for t in tools]
                calls = extract_tool_calls(text, names)
                if calls:
                    return Generation(None, calls, p_tok, c_tok, "tool_calls")
                if text.lstrip().startswith(("<tool_call>", "{")):
                    # It began a call it could not write validly: redo it under the grammar.
                    forced = self._forced_call(prompt, stop, sampling, tools)
                    forced.prompt_tokens += p_tok
                    forced.completion_tokens += c_tok
                    return forced
            return Generation(text, [], p_tok, c_tok, "length" if finish == "length" else "stop")

    def _forced_call(self, prompt: str, stop: list[str], sampling: dict[str, Any], tools: list[dict[str, Any]]) -> Generation:
        grammar = _grammar(json.dumps(tool_call_schema(tools)))
        text, p_tok, c_tok, finish = self._complete(prompt + TOOL_CALL_OPEN, stop, sampling, grammar, None)
        try:
            name, arguments = parse_forced_call(text)
        except (ValueError, RecursionError, KeyError) as exc:
            # Only possible when max_tokens cut the grammar short: report it, do not invent a call.
            raise CustomLLMError(
                status_code=500,
                message=f"local model stopped before finishing a tool call ({finish}); raise max_tokens. Output: {excerpt(text)}",
            ) from exc
        return Generation(None, [(name, arguments)], p_tok, c_tok, "tool_calls")


def _alias(model: str) -> str:
    return model.split("/", 1)[1] if model.startswith(f"{LOCAL_PREFIX}/") else model


def to_model_response(generation: Generation, model: str) -> ModelResponse:
    tool_calls = [
        ChatCompletionMessageToolCall(id=f"call_{uuid.uuid4().hex[:12]}", type="function", function=Function(name=n, arguments=a))
        for n, a in generation.tool_calls
    ] or None
    message = Message(content=generation.content, role="assistant", tool_calls=tool_calls)
    return ModelResponse(
        model=f"{LOCAL_PREFIX}/{_alias(model)}",
        choices=[Choices(index=0, message=message, finish_reason=generation.finish_reason)],
        usage=LiteLLMUsage(
            prompt_tokens=generation.prompt_tokens,
            completion_tokens=generation.completion_tokens,
            total_tokens=generation.prompt_tokens + generation.completion_tokens,
        ),
    )


def _chunks(generation_fn: Any) -> Iterator[dict[str, Any]]:
    """Run ``generation_fn(on_text)`` and yield LiteLLM GenericStreamingChunk dicts as text arrives.

    Runs the generation in a thread and hands pieces over through a queue, so the chunks stream live.
    """
    import queue

    pieces: queue.Queue = queue.Queue()
    done = object()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["generation"] = generation_fn(pieces.put)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
            outcome["error"] = exc
        finally:
            pieces.put(done)

    threading.Thread(target=work, daemon=True).start()
    while (piece := pieces.get()) is not done:
        yield {"text": piece, "is_finished": False, "finish_reason": "", "usage": None, "index": 0, "tool_use": None}
    if "error" in outcome:
        raise outcome["error"]
    generation: Generation = outcome["generation"]
    for index, (name, arguments) in enumerate(generation.tool_calls):
        yield {
            "text": "",
            "is_finished": False,
            "finish_reason": "",
            "usage": None,
            "index": 0,
            "tool_use": {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
                "index": index,
            },
        }
    yield {
        "text": "",
        "is_finished": True,
        "finish_reason": generation.finish_reason,
        "usage": {
            "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": generation.completion_tokens,
            "total_tokens": generation.prompt_tokens + generation.completion_tokens,
        },
        "index": 0,
        "tool_use": None,
    }


class LocalProvider(CustomLLM):
    """LiteLLM custom provider for ``local/<alias or path to .gguf>``."""

    def _generate(self, model: str, messages: list, optional_params: dict, on_text: Any = None) -> Generation:
        engine = LocalEngine(loaded_model(_alias(model)))
        return engine.generate(messages, optional_params or {}, on_text)

    def completion(self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any) -> ModelResponse:
        started = time.perf_counter()
        generation = self._generate(model, messages, optional_params or {})
        response = to_model_response(generation, model)
        response._response_ms = (time.perf_counter() - started) * 1000
        return response

    async def acompletion(self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any) -> ModelResponse:
        return await asyncio.to_thread(self.completion, model, messages, optional_params=optional_params)

    def streaming(self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any) -> Iterator[dict[str, Any]]:
        params = optional_params or {}
        yield from _chunks(lambda on_text: self._generate(model, messages, params, on_text))

    async def astreaming(self, model: str, messages: list, *args: Any, optional_params: dict | None = None, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        iterator = self.streaming(model, messages, optional_params=optional_params)
        sentinel = object()
        while (chunk := await asyncio.to_thread(next, iterator, sentinel)) is not sentinel:
            yield chunk


__all__ = ["LocalEngine", "LocalProvider", "LoadedModel", "loaded_model", "litellm"]

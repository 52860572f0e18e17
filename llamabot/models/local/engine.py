"""One chat request on the embedded model, written once as a generator and driven sync or async.

``LocalEngine.run(messages, params, stream)`` renders the prompt with the GGUF's chat template and submits it to
the model's :class:`~llamabot.models.local.scheduler.Scheduler`, which decodes it in one batch with every other
live request (continuous batching). The generator yields each text piece as it is made (when ``stream``) and
returns the :class:`Generation`. ``drive`` runs it in the calling thread; ``adrive`` runs it in a waiting thread
and hands the pieces to the event loop, so the loop never blocks and tokens arrive as they are made. Neither
calls llama.cpp: only the scheduler's thread does.

Prefix reuse, when a request joins the batch (see the scheduler): the longest prefix any sequence holds (its own
retained tokens, or another live sequence's, shared with ``llama_memory_seq_cp``), else the longest in the
in-process :class:`MemoryPrefixCache`; if the request still lacks the *fixed part* of its prompt (the tokens it
shares with the template rendered from its leading system messages and tools alone), it comes from the persistent
:class:`DiskPrefixCache`, or is evaluated and saved there (and in memory) for the next process. With the memory
cache on, the state after all but the prompt's last token is kept in memory too, so the next prompt of the same
family (ToT's next generation, an agent's next decision) starts from it.

States are taken and restored with llama.cpp's sequence-state API (``llama_state_seq_get_data`` /
``llama_state_seq_set_data``): the KV cells of one sequence only. ``Llama.save_state`` also copies the
``n_batch x n_vocab`` logits buffer (219 MB for Qwen2.5 at n_batch 512) and took 1.4 s to save and 2.9 s to load
where the sequence state took 7 ms each for the same 361-token prefix, so neither it nor ``LlamaRAMCache`` /
``LlamaDiskCache`` (built on it) serve here.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from llamabot.errors import excerpt
from llamabot.models.local.grammar import (
    begun_call,
    forces_tool_call,
    parse_forced_call,
    response_schema,
    selected_tools,
    template_messages,
    tool_call_schema,
)
from llamabot.models.local.prefix_cache import PrefixKey, PrefixState, common_prefix_length
from llamabot.models.local.request import LocalGenerationError, PrefixPlan, Sampling
from llamabot.models.local.runtime import LoadedModel
from llamabot.models.tool_call_text import extract_tool_calls
from llamabot.observe.hooks import ToolCallDelta

TOOL_CALL_OPEN = "<tool_call>\n"
DEFAULT_MAX_TOKENS = 1024

#: A generation: yields text pieces, returns what it produced.
GenerationRun = Generator["str | ToolCallDelta", None, "Generation"]


@dataclass
class Generation:
    """What one local call produced, before it is shaped into a reply."""

    content: str | None
    tool_calls: list[tuple[str, str]]
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    prefix: str = "none"  # where the prompt's prefix came from (see Completion.prefix)


@lru_cache(maxsize=64)
def _grammar(schema_json: str) -> str:
    """The GBNF grammar for a JSON schema."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(schema_json)


def sampling_params(params: dict[str, Any]) -> dict[str, Any]:
    """The llama.cpp sampling arguments for OpenAI-style ``params`` (temperature 0, i.e. greedy, by default)."""
    stop = params.get("stop") or []
    stop = [stop] if isinstance(stop, str) else list(stop)
    sampling = {
        "temperature": float(params.get("temperature") if params.get("temperature") is not None else 0.0),
        "max_tokens": int(
            params.get("max_tokens") or params.get("max_completion_tokens") or DEFAULT_MAX_TOKENS
        ),
        "stop": stop,
    }
    for key in ("top_p", "seed", "top_k", "repeat_penalty"):
        if params.get(key) is not None:
            sampling[key] = params[key]
    return sampling


class LocalEngine:
    """Runs chat requests on one loaded model."""

    def __init__(self, model: LoadedModel):
        self.model = model

    # --- prompt ---------------------------------------------------------------------------------------------

    def _tokens(self, text: str) -> list[int]:
        return self.model.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def _prompt(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> tuple[str, list[str]]:
        rendered = self.model.formatter(messages=template_messages(messages), tools=tools or None)
        return rendered.prompt, list(rendered.stop or [])

    def fixed_prefix(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, tokens: Sequence[int]
    ) -> int:
        """How many leading ``tokens`` are the fixed part of the prompt: those it shares with the template
        rendered from the leading system messages (and the tools) alone. 0 without a system message."""
        lead = []
        for message in messages:
            if message.get("role") != "system":
                break
            lead.append(message)
        if not lead:
            return 0
        head, _ = self._prompt(lead, tools)
        n = common_prefix_length(self._tokens(head), tokens)
        return n if n < len(tokens) else 0

    # --- prefix reuse ---------------------------------------------------------------------------------------

    def _key(self, tokens: Sequence[int]) -> PrefixKey:
        import llama_cpp

        return PrefixKey(
            self.model.identity,
            f"llama_cpp={llama_cpp.__version__}",
            self.model.settings.context,
            tuple(tokens),
        )

    def plan(self, fixed: int) -> PrefixPlan:
        """Where a request's prompt states come from and go (the model's caches; see the module docstring)."""
        memory, disk = self.model.memory, self.model.disk
        return PrefixPlan(
            fixed=fixed,
            longest=memory.longest if memory is not None else None,
            load_fixed=(lambda prefix: disk.get(self._key(prefix))) if disk is not None else None,
            save_fixed=self._save if disk is not None else None,
            save_prompt=memory.put if memory is not None else None,
        )

    def _save(self, state: PrefixState) -> None:
        try:
            self.model.disk.put(self._key(state.tokens), state)  # type: ignore[union-attr]
        except OSError:
            pass  # a read-only or full cache directory costs the next process time, never this answer

    # --- generation -----------------------------------------------------------------------------------------

    def _complete(
        self,
        tokens: list[int],
        fixed: int,
        stop: list[str],
        sampling: dict[str, Any],
        grammar: str | None,
        stream: bool,
    ) -> GenerationRun:
        """Generate from ``tokens``; yields pieces when ``stream``. Returns text, token counts, finish reason."""
        request = self.model.scheduler.submit(
            tokens,
            Sampling(
                temperature=sampling["temperature"],
                top_k=int(sampling.get("top_k", 40)),
                top_p=float(sampling.get("top_p", 0.95)),
                repeat_penalty=float(sampling.get("repeat_penalty", 1.0)),
                seed=sampling.get("seed"),
                grammar=grammar,
            ),
            stop + sampling["stop"],
            sampling["max_tokens"],
            stream,
            self.plan(fixed),
        )
        cancel = _CANCEL.get()
        if cancel is not None:
            cancel.add(request.cancel)
        done = yield from request.results()
        return Generation(
            done.text, [], done.prompt_tokens, done.completion_tokens, done.finish_reason, done.prefix
        )

    def run(
        self, messages: list[dict[str, Any]], params: dict[str, Any], stream: bool = False
    ) -> GenerationRun:
        """The request as a generator: text pieces as they are made (only when ``stream``), then the result."""
        tools = params.get("tools") or None
        tool_choice = params.get("tool_choice")
        if tool_choice == "none":
            tools = None
        sampling = sampling_params(params)
        schema = response_schema(params.get("response_format"))
        prompt, stop = self._prompt(messages, tools)
        if forces_tool_call(tools, tool_choice):
            return (
                yield from self._forced_call(
                    messages, prompt, stop, sampling, selected_tools(tools, tool_choice), stream
                )
            )
        tokens = self._tokens(prompt)
        fixed = self.fixed_prefix(messages, tools, tokens)
        grammar = _grammar(json.dumps(schema)) if schema is not None else None
        free = yield from self._complete(tokens, fixed, stop, sampling, grammar, stream)
        text = free.content or ""
        if tools and schema is None:
            names = [t.get("function", t).get("name") for t in tools]
            calls = extract_tool_calls(text, names)
            if calls:
                return Generation(
                    None, calls, free.prompt_tokens, free.completion_tokens, "tool_calls", free.prefix
                )
            if begun_call(text, tools):  # it began a call it could not write validly: redo it under the grammar
                forced = yield from self._forced_call(messages, prompt, stop, sampling, tools, stream)
                forced.prompt_tokens += free.prompt_tokens
                forced.completion_tokens += free.completion_tokens
                return forced
        free.finish_reason = "length" if free.finish_reason == "length" else "stop"
        return free

    def _forced_call(
        self,
        messages: list[dict[str, Any]],
        prompt: str,
        stop: list[str],
        sampling: dict[str, Any],
        tools: list[dict[str, Any]],
        stream: bool = False,
    ) -> GenerationRun:
        """The call written under the grammar; when ``stream``, its text as :class:`ToolCallDelta` pieces of one
        JSON document (``{"name": ..., "arguments": {...}}``), so a caller can follow the call as it is made."""
        grammar = _grammar(json.dumps(tool_call_schema(tools)))
        tokens = self._tokens(prompt + TOOL_CALL_OPEN)
        fixed = self.fixed_prefix(messages, tools, tokens)
        out = yield from _call_pieces(self._complete(tokens, fixed, stop, sampling, grammar, stream))
        try:
            name, arguments = parse_forced_call(out.content or "")
        except (ValueError, RecursionError, KeyError, TypeError) as exc:
            # Only possible when max_tokens cut the grammar short: report it, do not invent a call.
            raise LocalGenerationError(
                f"local model stopped before finishing a tool call ({out.finish_reason}); raise max_tokens. "
                f"Output: {excerpt(out.content)}"
            ) from exc
        return Generation(
            None, [(name, arguments)], out.prompt_tokens, out.completion_tokens, "tool_calls", out.prefix
        )


def _call_pieces(run: GenerationRun) -> GenerationRun:
    """``run``'s text pieces as pieces of the one tool call it writes (a JSON document); the same result."""
    try:
        while True:
            yield ToolCallDelta(0, None, next(run), document=True)
    except StopIteration as done:
        return done.value
    finally:
        run.close()


# --- drivers ----------------------------------------------------------------------------------------------------


class Cancel:
    """A cancellation that reaches the requests a generation submitted (see :func:`adrive`)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def add(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self.event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def cancel(self) -> None:
        with self._lock:
            self.event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


#: The cancellation of the generation running in this context (set by :func:`adrive`'s waiting thread).
_CANCEL: contextvars.ContextVar[Cancel | None] = contextvars.ContextVar("llamabot_local_cancel", default=None)

#: The threads async callers' generations wait in (they only wait: the scheduler's thread does the work).
_WAITERS: list[ThreadPoolExecutor] = []
_WAITERS_LOCK = threading.Lock()


def waiters() -> ThreadPoolExecutor:
    """The pool ``adrive`` waits in: wide enough for every request the scheduler may queue."""
    with _WAITERS_LOCK:
        if not _WAITERS:
            _WAITERS.append(ThreadPoolExecutor(max_workers=512, thread_name_prefix="llamabot-wait"))
        return _WAITERS[0]


def drive(run: GenerationRun, on_piece: Callable[[str], None] | None = None) -> Generation:
    """Run a generation in this thread, handing each piece to ``on_piece``; an error in ``on_piece`` closes
    the generation (which cancels its request) and propagates."""
    try:
        while True:
            piece = next(run)
            if on_piece is not None:
                on_piece(piece)
    except StopIteration as done:
        return done.value
    finally:
        run.close()


def _pump(run: GenerationRun, post: Callable[[str, Any], None], stop: threading.Event) -> None:
    """Iterate ``run``, posting ``("piece", text)``, then ``("done", generation)`` or ``("error", exception)``;
    stops at the next piece once ``stop`` is set. Never raises."""
    try:
        while not stop.is_set():
            try:
                piece = next(run)
            except StopIteration as done:
                post("done", done.value)
                return
            post("piece", piece)
    except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
        post("error", exc)
    finally:
        run.close()


async def adrive(
    make_run: Callable[[], GenerationRun], on_piece: Callable[[str], None] | None = None
) -> Generation:
    """Run a generation in a waiting thread; each piece is handed to ``on_piece`` on the event loop as it comes.

    If the caller is cancelled, the generation stops at the next piece and its request is cancelled (its
    sequence freed before the scheduler's next step); the caller does not wait for it.
    """
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancel = Cancel()

    def post(kind: str, value: Any) -> None:
        if kind == "piece" and on_piece is None:
            return
        try:
            loop.call_soon_threadsafe(pieces.put_nowait, (kind, value))
        except RuntimeError:  # the loop is gone: nobody is waiting any more
            cancel.cancel()

    def work() -> None:
        _CANCEL.set(cancel)
        try:
            run = make_run()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            post("error", exc)
            return
        _pump(run, post, cancel.event)

    worker = loop.run_in_executor(waiters(), contextvars.copy_context().run, work)
    try:
        while True:
            kind, value = await pieces.get()
            if kind == "piece":
                on_piece(value)  # type: ignore[misc]
            elif kind == "done":
                return value
            else:
                raise value
    finally:
        cancel.cancel()
        del worker  # finishes on its own; work() never raises

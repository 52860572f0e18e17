"""One chat request on the embedded model, written once as a generator and driven sync or async.

``LocalEngine.run(messages, params, stream)`` renders the prompt with the GGUF's chat template, makes sure the
model state already holds the longest known prefix of the prompt (see below), then generates with
``llm.create_completion``. It yields each text piece as llama.cpp produces it (when ``stream``) and returns the
:class:`Generation`. ``drive`` runs it in the calling thread; ``adrive`` runs it in a worker thread and hands the
pieces to the event loop, so the loop never blocks and tokens arrive as they are made.

Prefix reuse, before each generation (all under the model's lock):

1. llama.cpp already reuses what its context shares with the new prompt;
2. else the in-process :class:`MemoryPrefixCache` restores the longest cached prefix of the prompt when it is
   longer than what the context shares (alternating prompt families keep their own prefixes);
3. if the context still lacks the *fixed part* of the prompt (the tokens it shares with the template rendered
   from its leading system messages and tools alone), it is restored from the persistent
   :class:`DiskPrefixCache`, or evaluated and saved there (and in memory) for the next process;
4. with the memory cache on, the prompt minus its last token is evaluated and kept in memory, so the next prompt
   of the same family (ToT's next generation, an agent's next decision) starts from it.

States are taken and restored with llama.cpp's sequence-state API (``llama_state_seq_get_data`` /
``llama_state_seq_set_data``): the KV cells of sequence 0 only. ``Llama.save_state`` also copies the
``n_batch x n_vocab`` logits buffer (219 MB for Qwen2.5 at n_batch 512) and took 1.4 s to save and 2.9 s to load
where the sequence state took 7 ms each for the same 361-token prefix, so neither it nor ``LlamaRAMCache`` /
``LlamaDiskCache`` (built on it) serve here.
"""

from __future__ import annotations

import asyncio
import contextvars
import ctypes
import json
import queue
import threading
from collections.abc import Callable, Generator, Sequence
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from llamabot.errors import excerpt
from llamabot.models.local.grammar import (
    forces_tool_call,
    parse_forced_call,
    response_schema,
    selected_tools,
    template_messages,
    tool_call_schema,
)
from llamabot.models.local.prefix_cache import PrefixKey, PrefixState, common_prefix_length
from llamabot.models.local.runtime import LoadedModel
from llamabot.models.tool_call_text import extract_tool_calls
from llamabot.observe.hooks import ToolCallDelta

TOOL_CALL_OPEN = "<tool_call>\n"
DEFAULT_MAX_TOKENS = 1024

#: A generation: yields text pieces, returns what it produced.
GenerationRun = Generator["str | ToolCallDelta", None, "Generation"]


class LocalGenerationError(RuntimeError):
    """The embedded model's output cannot be used (e.g. a tool call cut short by ``max_tokens``)."""


@dataclass
class Generation:
    """What one local call produced, before it is shaped into a reply."""

    content: str | None
    tool_calls: list[tuple[str, str]]
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


@lru_cache(maxsize=64)
def _grammar(schema_json: str) -> Any:
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_json_schema(schema_json, verbose=False)


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


def snapshot(llm: Any, tokens: Sequence[int]) -> PrefixState:
    """The state of sequence 0, which must hold exactly ``tokens``."""
    import llama_cpp

    size = llama_cpp.llama_state_seq_get_size(llm.ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(llm.ctx, buffer, size, 0)
    return PrefixState(tuple(tokens), bytes(memoryview(buffer)[:written]))


def restore(llm: Any, state: PrefixState) -> int:
    """Put ``state`` into the context, replacing what it held; how many tokens the context now holds (0 when
    llama.cpp refuses the state: the context is then empty)."""
    import llama_cpp

    llm.n_tokens = 0
    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm.ctx), -1, -1, -1)
    source = (ctypes.c_uint8 * len(state.data)).from_buffer_copy(state.data)
    if llama_cpp.llama_state_seq_set_data(llm.ctx, source, len(state.data), 0) != len(state.data):
        llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm.ctx), -1, -1, -1)
        return 0
    n = len(state.tokens)
    llm.input_ids[:n] = state.tokens
    llm.n_tokens = n
    return n


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

    def reuse_prefix(self, tokens: Sequence[int], fixed: int) -> str:
        """Bring the context to the longest known prefix of ``tokens``; says where that prefix came from:
        ``context`` (llama.cpp's own reuse), ``memory``, ``disk``, ``evaluated`` (the fixed part, now saved) or
        ``none``. With the memory cache on, the prompt (all but its last token) is then evaluated and kept in
        memory too, so the next prompt of the same family reuses it whatever ran in between."""
        llm, memory, disk = self.model.llm, self.model.memory, self.model.disk
        shared = common_prefix_length(llm.input_ids[: llm.n_tokens].tolist(), tokens)
        source = "context" if shared else "none"
        if memory is not None:
            cached = memory.longest(tokens)
            if cached is not None and len(cached.tokens) > shared:
                shared = restore(llm, cached)
                source = "memory" if shared else "none"
        if 0 < fixed and shared < fixed:
            prefix = tuple(tokens[:fixed])
            state = disk.get(self._key(prefix)) if disk is not None else None
            if state is not None and restore(llm, state):
                source = "disk"
            else:
                shared = 0 if state is not None else shared  # a refused state left the context empty
                state = self._extend(shared, prefix)
                source = "evaluated"
                self._save(prefix, state)
            shared = fixed
            if memory is not None:
                memory.put(state)
        if memory is not None and shared < len(tokens) - 1:
            memory.put(self._extend(shared, tuple(tokens[:-1])))
        return source

    def _extend(self, shared: int, tokens: tuple[int, ...]) -> PrefixState:
        """Evaluate ``tokens`` after the ``shared`` ones already in the context; the state after them."""
        llm = self.model.llm
        llm.n_tokens = shared
        llm.eval(tokens[shared:])
        return snapshot(llm, tokens)

    def _save(self, prefix: tuple[int, ...], state: PrefixState) -> None:
        if self.model.disk is None:
            return
        try:
            self.model.disk.put(self._key(prefix), state)
        except OSError:
            pass  # a read-only or full cache directory costs the next process time, never this answer

    # --- generation -----------------------------------------------------------------------------------------

    def _complete(
        self, tokens: list[int], stop: list[str], sampling: dict[str, Any], grammar: Any, stream: bool
    ) -> GenerationRun:
        """Generate from ``tokens``; yields pieces when ``stream``. Returns text, token counts, finish reason."""
        llm = self.model.llm
        kwargs = {**sampling, "stop": stop + sampling["stop"], "grammar": grammar}
        if not stream:
            out = llm.create_completion(tokens, **kwargs)
            choice, usage = out["choices"][0], out["usage"]
            return Generation(
                choice["text"],
                [],
                usage["prompt_tokens"],
                usage["completion_tokens"],
                choice["finish_reason"] or "stop",
            )
        pieces: list[str] = []
        finish = "stop"
        for chunk in llm.create_completion(tokens, stream=True, **kwargs):
            choice = chunk["choices"][0]
            if choice["text"]:
                pieces.append(choice["text"])
                yield choice["text"]
            finish = choice["finish_reason"] or finish
        text = "".join(pieces)
        completion = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)) if text else 0
        return Generation(text, [], len(tokens), completion, finish)

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
        with self.model.lock:
            prompt, stop = self._prompt(messages, tools)
            tokens = self._tokens(prompt)
            self.reuse_prefix(tokens, self.fixed_prefix(messages, tools, tokens))
            if forces_tool_call(tools, tool_choice):
                return (
                    yield from self._forced_call(
                        prompt, stop, sampling, selected_tools(tools, tool_choice), stream
                    )
                )
            grammar = _grammar(json.dumps(schema)) if schema is not None else None
            free = yield from self._complete(tokens, stop, sampling, grammar, stream)
            text = free.content or ""
            if tools and schema is None:
                names = [t.get("function", t).get("name") for t in tools]
                calls = extract_tool_calls(text, names)
                if calls:
                    return Generation(None, calls, free.prompt_tokens, free.completion_tokens, "tool_calls")
                if text.lstrip().startswith(("<tool_call>", "{")):
                    # It began a call it could not write validly: redo it under the grammar.
                    forced = yield from self._forced_call(prompt, stop, sampling, tools, stream)
                    forced.prompt_tokens += free.prompt_tokens
                    forced.completion_tokens += free.completion_tokens
                    return forced
            free.finish_reason = "length" if free.finish_reason == "length" else "stop"
            return free

    def _forced_call(
        self,
        prompt: str,
        stop: list[str],
        sampling: dict[str, Any],
        tools: list[dict[str, Any]],
        stream: bool = False,
    ) -> GenerationRun:
        """The call written under the grammar; when ``stream``, its text as :class:`ToolCallDelta` pieces of one
        JSON document (``{"name": ..., "arguments": {...}}``), so a caller can follow the call as it is made."""
        grammar = _grammar(json.dumps(tool_call_schema(tools)))
        out = yield from _call_pieces(
            self._complete(self._tokens(prompt + TOOL_CALL_OPEN), stop, sampling, grammar, stream)
        )
        try:
            name, arguments = parse_forced_call(out.content or "")
        except (ValueError, RecursionError, KeyError, TypeError) as exc:
            # Only possible when max_tokens cut the grammar short: report it, do not invent a call.
            raise LocalGenerationError(
                f"local model stopped before finishing a tool call ({out.finish_reason}); raise max_tokens. "
                f"Output: {excerpt(out.content)}"
            ) from exc
        return Generation(None, [(name, arguments)], out.prompt_tokens, out.completion_tokens, "tool_calls")


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


#: The one thread every generation runs on (see :func:`llama_thread`).
_LLAMA: list[ThreadPoolExecutor] = []
_LLAMA_LOCK = threading.Lock()
_LLAMA_NAME = "llamabot-llama"


def llama_thread() -> ThreadPoolExecutor:
    """The thread every embedded-model generation of this process runs on, whoever asks (a caller's thread, an
    event loop, a pool). llama.cpp's OpenMP team belongs to the thread that calls it and spins for a while after
    each token; a generation from another thread got a second team that competed with the first's spinning (one
    request ran at 13-15 instead of 20 tok/s on two cores when its thread changed). One model serves one request at
    a time anyway (its lock), so one thread costs no throughput."""
    with _LLAMA_LOCK:
        if not _LLAMA:
            _LLAMA.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix=_LLAMA_NAME))
        return _LLAMA[0]


def _pump(run: GenerationRun, post: Callable[[str, Any], None], stop: threading.Event) -> None:
    """Iterate ``run`` (on the llama thread), posting ``("piece", text)``, then ``("done", generation)`` or
    ``("error", exception)``; stops at the next piece once ``stop`` is set. Never raises."""
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


def on_llama_thread(run: GenerationRun) -> GenerationRun:
    """``run`` carried out on :func:`llama_thread`: its pieces yielded here as they come, its result returned, its
    error raised here. Closing this generator (or an error in the consumer) stops ``run`` at its next piece and
    waits for it to let the model go."""
    if threading.current_thread().name.startswith(_LLAMA_NAME):
        return (yield from run)
    pieces: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    stop = threading.Event()
    pumped = llama_thread().submit(contextvars.copy_context().run, _pump, run, lambda *item: pieces.put(item), stop)
    try:
        while True:
            kind, value = pieces.get()
            if kind == "piece":
                yield value
            elif kind == "done":
                return value
            else:
                raise value
    finally:
        stop.set()
        futures.wait((pumped,))


def drive(run: GenerationRun, on_piece: Callable[[str], None] | None = None) -> Generation:
    """Run a generation on the llama thread, handing each piece to ``on_piece`` in this thread."""
    pumped = on_llama_thread(run)
    try:
        while True:
            piece = next(pumped)
            if on_piece is not None:
                on_piece(piece)
    except StopIteration as done:
        return done.value
    finally:
        pumped.close()


async def adrive(
    make_run: Callable[[], GenerationRun], on_piece: Callable[[str], None] | None = None
) -> Generation:
    """Run a generation on the llama thread; each piece is handed to ``on_piece`` on the event loop as it comes.

    If the caller is cancelled, the generation stops at the next piece (llama.cpp cannot be interrupted mid-token)
    and releases the model's lock; the caller does not wait for it.
    """
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancelled = threading.Event()

    def post(kind: str, value: Any) -> None:
        if kind == "piece" and on_piece is None:
            return
        try:
            loop.call_soon_threadsafe(pieces.put_nowait, (kind, value))
        except RuntimeError:  # the loop is gone: nobody is waiting any more
            cancelled.set()

    def work() -> None:
        try:
            run = make_run()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            post("error", exc)
            return
        _pump(run, post, cancelled)

    worker = loop.run_in_executor(llama_thread(), contextvars.copy_context().run, work)
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
        cancelled.set()
        del worker  # finishes on its own; work() never raises

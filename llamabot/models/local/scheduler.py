"""The embedded model's batching engine: one thread owns the llama.cpp context and decodes every live request in
one batch per step (continuous batching).

- **Requests** come from any thread or event loop (:meth:`Scheduler.submit`) and wait in a bounded queue
  (``LLAMABOT_LOCAL_QUEUE``; a full queue is a :class:`LocalBusyError` at once). A waiting request joins the
  running batch at the next step when a sequence is free (``LLAMABOT_LOCAL_SEQUENCES``) and the context has room
  for its prompt and ``max_tokens``; it leaves when it is done or cancelled, and its sequence is free at once.
- **A step** carries one token for each decoding sequence plus a chunk of the prompts still being read, in arrival
  order: at most ``LLAMABOT_LOCAL_PREFILL_CHUNK`` prompt tokens while others decode, so a long new prompt never
  stalls their streams for long, and the whole ``n_batch`` when nobody decodes.
- **Each sequence samples with its own chain** (greedy at temperature 0, else top-k/top-p/min-p/temperature/seed;
  a GBNF grammar for tool calls and JSON schemas), stops at an end-of-generation token, a stop string or
  ``max_tokens``, and streams text as it is made (held back while it could still become a stop string). Greedy
  under a grammar checks the best token alone before the whole vocabulary (:mod:`.sampling`).
- **Prefixes are shared**: a new request starts from the longest prefix of its prompt that any sequence already
  holds (its own retained tokens, or another sequence's, copied with ``llama_memory_seq_cp``: the KV cells are
  shared, not recomputed), or from the in-process/persistent prefix caches (:class:`PrefixPlan`); the prompt states
  it reaches (its fixed part, all but its last token) are saved there on the way.
- **Failures stay with their request**: a decode that fails errors out the requests in that batch and clears their
  sequences; every other request goes on. The thread never dies with requests waiting.

The llama.cpp calls are the public C API (``llama_batch_init``, ``llama_decode``, ``llama_sampler_*``,
``llama_memory_seq_*``, ``llama_state_seq_*``).
"""

from __future__ import annotations

import codecs
import ctypes
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llamabot.models.local.prefix_cache import PrefixState, common_prefix_length
from llamabot.models.local.request import (
    CANCELLED,
    Completion,
    LocalBusyError,
    LocalGenerationError,
    PrefixPlan,
    Request,
    Sampling,
    first_stop,
    held_back,
)
from llamabot.models.local.sampling import SequenceSampler


@dataclass(eq=False)
class _Live:
    """A request that holds a sequence (scheduler thread only)."""

    request: Request
    seq: int
    pending: list[int]  # prompt tokens not yet in the KV cache
    marks: list[tuple[int, str]]  # (position, "fixed"|"prompt"): save the state when the sequence holds this many
    prefix: str
    sampler: SequenceSampler | None = None
    generated: int = 0
    feed: int | None = None  # the last sampled token, decoded at the next step
    text: str = ""
    emitted: int = 0
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="ignore"))


class Scheduler:
    """Owns one llama.cpp context over ``llm``'s weights; see the module docstring."""

    def __init__(self, llm: Any, *, n_ctx: int, n_batch: int, n_threads: int, sequences: int, queue_size: int,
                 prefill_chunk: int):
        self.llm = llm
        self.n_ctx, self.n_batch, self.n_threads = n_ctx, n_batch, n_threads
        self.sequences, self.queue_size, self.prefill_chunk = sequences, queue_size, prefill_chunk
        self.seqs: list[list[int]] = [[] for _ in range(sequences)]  # the tokens each sequence holds
        self.used = [0.0] * sequences  # when each free sequence was last used (LRU eviction)
        self.owner: list[_Live | None] = [None] * sequences
        self.decodes = 0  # llama_decode calls made (read by tests and benchmarks)
        self.peak = 0  # the most requests one llama_decode call carried (read by tests: did callers batch?)
        self.grammar_refusals = 0  # greedy grammar steps that sampled the whole vocabulary again (read by tests)
        self._waiting: deque[Request] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="llamabot-llama", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    # --- the caller's side ----------------------------------------------------------------------------------

    def submit(self, tokens: Sequence[int], sampling: Sampling, stop: Sequence[str] = (), max_tokens: int = 0,
               stream: bool = False, plan: PrefixPlan | None = None) -> Request:
        """Queue a generation from prompt ``tokens``; ``max_tokens`` 0 (or more than fits) means up to the
        context's end. Raises :class:`LocalGenerationError` for a prompt that does not fit the context and
        :class:`LocalBusyError` when the queue is full."""
        if not tokens:
            raise LocalGenerationError("the embedded model got an empty prompt")
        if len(tokens) >= self.n_ctx:
            raise LocalGenerationError(
                f"the prompt has {len(tokens)} tokens; the embedded model's context holds {self.n_ctx} "
                "(raise LLAMABOT_LOCAL_N_CTX or shorten the prompt)"
            )
        room = self.n_ctx - len(tokens)
        request = Request(tuple(tokens), sampling, tuple(s for s in stop if s),
                          room if max_tokens <= 0 else min(max_tokens, room), stream, plan or PrefixPlan())
        request.wake = self._wake
        with self._cond:
            if self._closing:
                raise LocalGenerationError("the embedded model is closed")
            if len(self._waiting) >= self.queue_size:
                raise LocalBusyError(
                    f"the embedded model has {len(self._waiting)} requests waiting, the most it queues "
                    "(LLAMABOT_LOCAL_QUEUE); retry later"
                )
            self._waiting.append(request)
            self._cond.notify()
        return request

    def forget(self) -> None:
        """Drop what the free sequences hold (the next prompts start from the caches or from nothing)."""
        done = threading.Event()

        def clear() -> None:
            for seq in range(self.sequences):
                if self.owner[seq] is None:
                    self._clear(seq)
            done.set()

        self._call(clear)
        done.wait()

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify()

    def _call(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the scheduler thread between steps."""
        with self._cond:
            self._calls.append(fn)
            self._cond.notify()

    # --- the scheduler thread -------------------------------------------------------------------------------

    def _main(self) -> None:
        import llama_cpp

        self._calls: list[Callable[[], None]] = []
        try:
            params = llama_cpp.llama_context_default_params()
            params.n_ctx = self.n_ctx
            params.n_batch = params.n_ubatch = self.n_batch
            params.n_seq_max = self.sequences
            params.n_threads = params.n_threads_batch = self.n_threads
            params.kv_unified = True
            params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED  # as Llama(): same numerics
            params.no_perf = True
            self.ctx = llama_cpp.llama_init_from_model(self.llm.model, params)
            if not self.ctx:
                raise LocalGenerationError("llama.cpp could not create a context for the embedded model")
            self.memory = llama_cpp.llama_get_memory(self.ctx)
            self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
            self.batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        except BaseException as exc:  # noqa: BLE001 - raised in the constructor
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        live: list[_Live] = []
        try:
            while True:
                with self._cond:
                    while not (self._waiting or live or self._calls or self._closing):
                        self._cond.wait()
                    calls, self._calls = self._calls, []
                    closing = self._closing
                for fn in calls:
                    fn()
                if closing:
                    break
                try:
                    self._drop_cancelled(live)
                    self._admit(live)
                    if live:
                        self._step(live)
                except Exception as exc:  # noqa: BLE001 - a bug must not strand the requests
                    for job in list(live):
                        self._finish(live, job, error=exc)
                        self._clear(job.seq)
        finally:
            closed = LocalGenerationError("the embedded model was closed while this request ran")
            for job in list(live):
                self._finish(live, job, error=closed)
            with self._cond:
                waiting, self._waiting = list(self._waiting), deque()
            for request in waiting:
                request.events.put(("error", closed))
            llama_cpp.llama_batch_free(self.batch)
            llama_cpp.llama_free(self.ctx)

    def _clear(self, seq: int) -> None:
        import llama_cpp

        llama_cpp.llama_memory_seq_rm(self.memory, seq, -1, -1)
        self.seqs[seq] = []

    def _drop_cancelled(self, live: list[_Live]) -> None:
        for job in [j for j in live if j.request.cancelled.is_set()]:
            self._finish(live, job, error=CANCELLED)
        with self._cond:
            gone = [r for r in self._waiting if r.cancelled.is_set()]
            if gone:
                self._waiting = deque(r for r in self._waiting if not r.cancelled.is_set())
        for request in gone:
            request.events.put(("error", CANCELLED))

    def _admit(self, live: list[_Live]) -> None:
        """Move waiting requests into free sequences while the context has room (arrival order)."""
        while True:
            with self._cond:
                if not self._waiting:
                    return
                request = self._waiting[0]
                free = [s for s in range(self.sequences) if self.owner[s] is None]
                reserved = sum(len(j.request.tokens) + j.request.max_tokens for j in live)
                need = len(request.tokens) + request.max_tokens
                if not free or (live and reserved + need > self.n_ctx):
                    return
                self._waiting.popleft()
            try:
                live.append(self._start(request, free, reserved + need))
            except Exception as exc:  # noqa: BLE001 - this request's failure only
                request.events.put(("error", exc))

    def _start(self, request: Request, free: list[int], reserved: int) -> _Live:
        import llama_cpp

        tokens, plan = request.tokens, request.plan
        limit = len(tokens) - 1  # the last prompt token is always decoded: its logits give the first token
        seq = max(free, key=lambda s: (common_prefix_length(self.seqs[s], tokens[:limit]), -self.used[s]))
        shared = common_prefix_length(self.seqs[seq], tokens[:limit])
        prefix = "context" if shared else "none"
        source, copied = -1, shared
        for s in range(self.sequences):
            if self.owner[s] is not None:
                n = common_prefix_length(self.seqs[s], tokens[:limit])
                if n > copied:
                    source, copied = s, n
        # Free sequences hold cells too: drop the least recently used ones until the new request fits.
        for s in sorted((s for s in free if s != seq and self.seqs[s]), key=lambda s: self.used[s]):
            if reserved + sum(len(self.seqs[x]) for x in free if x != seq) <= self.n_ctx:
                break
            self._clear(s)
        llama_cpp.llama_memory_seq_rm(self.memory, seq, shared, -1)
        self.seqs[seq] = list(tokens[:shared])
        if source >= 0:
            self._clear(seq)
            llama_cpp.llama_memory_seq_cp(self.memory, source, seq, 0, copied)
            self.seqs[seq], shared, prefix = list(tokens[:copied]), copied, "shared"
        if plan.longest is not None:
            cached = plan.longest(tokens)  # states of at most len - 1 tokens
            if cached is not None and len(cached.tokens) > shared:
                shared = self._restore(seq, cached)
                prefix = "memory" if shared else "none"
        marks: list[tuple[int, str]] = []
        if 0 < plan.fixed < len(tokens) and shared < plan.fixed:
            state = plan.load_fixed(tokens[: plan.fixed]) if plan.load_fixed is not None else None
            if state is not None and self._restore(seq, state):
                shared, prefix = plan.fixed, "disk"
                if plan.save_prompt is not None:
                    plan.save_prompt(state)
            else:
                if state is not None:
                    shared = 0  # llama.cpp refused the saved state and left the sequence empty
                marks.append((plan.fixed, "fixed"))
                prefix = "evaluated"
        if plan.save_prompt is not None and shared < limit:
            marks.append((limit, "prompt"))
        job = _Live(request, seq, list(tokens[shared:]), marks, prefix)
        job.sampler = self._sampler(request.sampling)
        self.owner[seq] = job
        return job

    def _restore(self, seq: int, state: PrefixState) -> int:
        """Put ``state`` into ``seq``; how many tokens it now holds (0 when llama.cpp refuses the state)."""
        import llama_cpp

        self._clear(seq)
        source = (ctypes.c_uint8 * len(state.data)).from_buffer_copy(state.data)
        if llama_cpp.llama_state_seq_set_data(self.ctx, source, len(state.data), seq) != len(state.data):
            self._clear(seq)
            return 0
        self.seqs[seq] = list(state.tokens)
        return len(state.tokens)

    def _snapshot(self, seq: int) -> PrefixState:
        import llama_cpp

        size = llama_cpp.llama_state_seq_get_size(self.ctx, seq)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(self.ctx, buffer, size, seq)
        return PrefixState(tuple(self.seqs[seq]), bytes(memoryview(buffer)[:written]))

    def _sampler(self, sampling: Sampling) -> SequenceSampler:
        try:
            return SequenceSampler(self.vocab, sampling)
        except ValueError as exc:
            raise LocalGenerationError(str(exc)) from None

    def _step(self, live: list[_Live]) -> None:
        """One llama_decode over every live sequence; then sample, stream and save prompt states."""
        import llama_cpp

        entries: list[tuple[_Live, list[int], bool]] = []  # (job, tokens, logits after the last)
        decoding = [j for j in live if not j.pending]
        for job in decoding:
            entries.append((job, [job.feed], True))  # type: ignore[list-item]
        budget = self.n_batch - len(entries)
        if decoding:
            budget = min(budget, self.prefill_chunk)
        for job in live:
            if not job.pending or budget <= 0:
                continue
            take = min(budget, len(job.pending))
            held = len(self.seqs[job.seq])
            for position, _ in job.marks:
                if position > held:
                    take = min(take, position - held)
                    break
            entries.append((job, job.pending[:take], take == len(job.pending)))
            budget -= take
        batch, n, outputs = self.batch, 0, []
        for job, tokens, last in entries:
            base = len(self.seqs[job.seq])
            for i, token in enumerate(tokens):
                batch.token[n] = token
                batch.pos[n] = base + i
                batch.n_seq_id[n] = 1
                batch.seq_id[n][0] = job.seq
                batch.logits[n] = last and i == len(tokens) - 1
                if batch.logits[n]:
                    outputs.append((job, n))
                n += 1
        batch.n_tokens = n
        code = llama_cpp.llama_decode(self.ctx, batch)
        self.decodes += 1
        self.peak = max(self.peak, len(entries))
        if code != 0:
            error = LocalGenerationError(
                f"llama_decode failed with code {code} (1: no room in the context; raise LLAMABOT_LOCAL_N_CTX "
                "or lower LLAMABOT_LOCAL_SEQUENCES)"
            )
            for job, _, _ in entries:
                self._finish(live, job, error=error)
                self._clear(job.seq)
            return
        for job, tokens, _ in entries:
            self.seqs[job.seq].extend(tokens)
            if job.pending:
                del job.pending[: len(tokens)]
            held = len(self.seqs[job.seq])
            while job.marks and job.marks[0][0] <= held:
                position, kind = job.marks.pop(0)
                if position == held:
                    self._save(job, kind)
        for job, index in outputs:
            self._accept(live, job, job.sampler.sample(self.ctx, index))

    def _save(self, job: _Live, kind: str) -> None:
        plan = job.request.plan
        state = self._snapshot(job.seq)
        if kind == "fixed" and plan.save_fixed is not None:
            plan.save_fixed(state)
        if plan.save_prompt is not None:
            plan.save_prompt(state)

    def _accept(self, live: list[_Live], job: _Live, token: int) -> None:
        import llama_cpp

        request = job.request
        if llama_cpp.llama_vocab_is_eog(self.vocab, token):
            job.text += job.decoder.decode(b"", final=True)
            self._emit(job, len(job.text))
            self._finish(live, job, "stop")
            return
        job.generated += 1
        buffer = ctypes.create_string_buffer(64)
        size = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, 64, 0, False)
        if size < 0:
            buffer = ctypes.create_string_buffer(-size)
            size = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, -size, 0, False)
        start = max(0, len(job.text) - max((len(s) for s in request.stop), default=0))
        job.text += job.decoder.decode(buffer.raw[:size], final=False)
        at = first_stop(job.text, request.stop, start)
        if at >= 0:
            job.text = job.text[:at]
            self._emit(job, len(job.text))
            self._finish(live, job, "stop")
        elif job.generated >= request.max_tokens:
            job.text += job.decoder.decode(b"", final=True)
            self._emit(job, len(job.text))
            self._finish(live, job, "length")
        else:
            self._emit(job, len(job.text) - held_back(job.text, request.stop))
            job.feed = token

    def _emit(self, job: _Live, upto: int) -> None:
        if upto > job.emitted:
            if job.request.stream:
                job.request.events.put(("piece", job.text[job.emitted : upto]))
            job.emitted = upto

    def _finish(self, live: list[_Live], job: _Live, reason: str = "", error: BaseException | None = None) -> None:
        """Take ``job`` out of the batch and free its sequence (its tokens stay for the next prompt to reuse)."""

        if job in live:
            live.remove(job)
        self.owner[job.seq] = None
        self.used[job.seq] = time.monotonic()
        if job.sampler is not None:
            self.grammar_refusals += job.sampler.refusals
            job.sampler.free()
            job.sampler = None
        if error is not None:
            job.request.events.put(("error", error))
        elif reason:
            request = job.request
            request.events.put(("done", Completion(job.text, len(request.tokens), job.generated, reason,
                                                   job.prefix)))

"""One sequence's sampler for the batching scheduler, on llama.cpp's public sampler API.

A chain per sequence: repetition penalty (when set), the GBNF grammar (tool calls, JSON schemas), then greedy at
temperature 0, else top-k, top-p, min-p, temperature and a seeded draw.

**Greedy under a grammar checks one token, not the vocabulary.** The grammar sampler tests every candidate (151,936
for Qwen2.5) against the grammar at every step. A greedy sequence takes the best token without the grammar first
and asks the grammar about that token only; when the grammar refuses it, the step samples again through the whole
chain. Greedy with a grammar is "the best token the grammar allows", so the token is the same either way
(llama.cpp's own ``common_sampler`` does this). Sampled (temperature > 0) and penalised sequences always use the
whole chain: checking one draw first would change their distribution.
"""

from __future__ import annotations

import ctypes
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llamabot.models.local.request import Sampling


class SequenceSampler:
    """The sampler of one sequence; :meth:`sample` reads its logits row, :meth:`free` releases the C objects.
    ``ValueError`` when llama.cpp rejects the grammar."""

    def __init__(self, vocab: Any, sampling: Sampling):
        import llama_cpp

        self._llama = llama_cpp
        self.chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        self.grammar: Any = None
        self.greedy: Any = None  # the chain without the grammar, when one token can be checked instead
        self.refusals = 0  # steps where the grammar refused the best token (the whole chain sampled again)
        add = lambda sampler: llama_cpp.llama_sampler_chain_add(self.chain, sampler)  # noqa: E731
        if sampling.repeat_penalty != 1.0:
            add(llama_cpp.llama_sampler_init_penalties(
                llama_cpp.llama_vocab_n_tokens(vocab), 64, sampling.repeat_penalty, 0.0, 0.0))
        if sampling.grammar is not None:
            self.grammar = llama_cpp.llama_sampler_init_grammar(vocab, sampling.grammar.encode(), b"root")
            if not self.grammar:
                llama_cpp.llama_sampler_free(self.chain)
                raise ValueError("llama.cpp rejected the grammar for this request")
            add(self.grammar)  # the chain owns it and frees it
        if sampling.temperature <= 0:
            add(llama_cpp.llama_sampler_init_greedy())
            if self.grammar is not None and sampling.repeat_penalty == 1.0:
                self.greedy = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
                llama_cpp.llama_sampler_chain_add(self.greedy, llama_cpp.llama_sampler_init_greedy())
                self.one = (llama_cpp.llama_token_data * 1)()
                self.candidate = llama_cpp.llama_token_data_array(self.one, 1, -1, False)
        else:
            add(llama_cpp.llama_sampler_init_top_k(sampling.top_k))
            add(llama_cpp.llama_sampler_init_top_p(sampling.top_p, 1))
            add(llama_cpp.llama_sampler_init_min_p(sampling.min_p, 1))
            add(llama_cpp.llama_sampler_init_temp(sampling.temperature))
            seed = llama_cpp.LLAMA_DEFAULT_SEED if sampling.seed is None else sampling.seed & 0xFFFFFFFF
            add(llama_cpp.llama_sampler_init_dist(seed))

    def sample(self, ctx: Any, index: int) -> int:
        """The next token from logits row ``index`` of ``ctx``; the grammar (if any) has accepted it."""
        llama = self._llama
        if self.greedy is None:
            return llama.llama_sampler_sample(self.chain, ctx, index)
        token = llama.llama_sampler_sample(self.greedy, ctx, index)
        self.one[0].id, self.one[0].logit, self.one[0].p = token, 0.0, 0.0
        self.candidate.size, self.candidate.selected, self.candidate.sorted = 1, -1, False
        llama.llama_sampler_apply(self.grammar, ctypes.byref(self.candidate))
        if math.isinf(self.one[0].logit):  # the grammar refuses the best token: the best one it allows
            self.refusals += 1
            return llama.llama_sampler_sample(self.chain, ctx, index)
        llama.llama_sampler_accept(self.grammar, token)
        return token

    def free(self) -> None:
        for sampler in (self.chain, self.greedy):
            if sampler is not None:
                self._llama.llama_sampler_free(sampler)
        self.chain = self.greedy = self.grammar = None

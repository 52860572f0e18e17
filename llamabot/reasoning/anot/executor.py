"""Phase 3's core: fill the steps of one layer and call the model for each, through the model seam.

One step is one exchange (``step_exchange``: yield a request, receive the reply, return its text), so the sync
driver (:func:`run_layer`, steps one after another) and the async driver (:func:`arun_layer`, steps at once
with ``asyncio.gather`` under a concurrency limit) share every line but the model call. A step whose variables
cannot be filled does not call the model: its output is ``ERROR: ...`` (the ranking then falls back, see
``ranking.py``). A model failure is raised after the layer's other steps have finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.models.messages import system, user
from llamabot.models.reply import ModelRequest
from llamabot.models.seam import ChatModel
from llamabot.observe.tracing import span
from llamabot.reasoning.anot.lwt import LWTStep
from llamabot.reasoning.anot.prompts import STEP_SYSTEM
from llamabot.reasoning.anot.substitution import SubstitutionContext, SubstitutionError, substitute

DEFAULT_CONCURRENCY = 8


@dataclass(frozen=True, slots=True)
class StepCall:
    """A step ready to run: its filled prompt, or the error that kept it from being filled."""

    step: LWTStep
    prompt: str | None
    error: str | None = None


def fill_layer(layer: Sequence[LWTStep], context: SubstitutionContext) -> list[StepCall]:
    """Fill every step of ``layer`` from ``context`` (the outputs of earlier layers included)."""
    calls = []
    for step in layer:
        try:
            calls.append(StepCall(step, substitute(step.prompt, context, step.id)))
        except SubstitutionError as exc:
            calls.append(StepCall(step, None, str(exc)))
    return calls


def prompt_exchange(model_name: str, system_prompt: str, prompt: str, params: dict[str, Any]) -> Exchange[str]:
    """One model call: a system prompt and one user prompt in, the reply's text out ("" for an empty reply)."""
    reply = yield ModelRequest(model=model_name, messages=[system(system_prompt), user(prompt)], params=params)
    return (reply.content or "").strip()


def step_exchange(model_name: str, prompt: str, params: dict[str, Any]) -> Exchange[str]:
    """One step's model call: the filled prompt in, the reply's text out."""
    return (yield from prompt_exchange(model_name, STEP_SYSTEM, prompt, params))


def _error_output(call: StepCall) -> str:
    return f"ERROR: {call.error}"


def run_layer(calls: Sequence[StepCall], model: ChatModel, params: dict[str, Any]) -> dict[str, str]:
    """Run the steps one after another (sync twin); returns step id -> output."""
    outputs: dict[str, str] = {}
    for call in calls:
        if call.prompt is None:
            outputs[call.step.id] = _error_output(call)
            continue
        with span(call.step.id, "lwt_step"):
            outputs[call.step.id] = run_exchange(step_exchange(model.name, call.prompt, params), model)
    return outputs


async def arun_layer(
    calls: Sequence[StepCall], model: ChatModel, params: dict[str, Any], concurrency: int = DEFAULT_CONCURRENCY
) -> dict[str, str]:
    """Run the steps concurrently, at most ``concurrency`` model calls at a time; returns step id -> output."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    limit = asyncio.Semaphore(concurrency)

    async def one(call: StepCall) -> str:
        if call.prompt is None:
            return _error_output(call)
        async with limit:
            with span(call.step.id, "lwt_step"):
                return await arun_exchange(step_exchange(model.name, call.prompt, params), model)

    results = await asyncio.gather(*(one(call) for call in calls), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return {call.step.id: str(result) for call, result in zip(calls, results, strict=True)}

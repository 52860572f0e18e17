"""Phase 3's core: fill the steps of one layer and call the model for each, through the model seam.

One step is one exchange (``step_exchange``: yield a request, receive the reply, return its text), and one
layer is :func:`_step_output` per step, then :func:`_layer_outputs` over the results. The two drivers differ
only in how the steps overlap: :func:`run_layer` (the sync bot, the CLI) runs them at once in worker threads,
:func:`arun_layer` (the async bot) as tasks under ``asyncio.gather``; both hold at most ``concurrency`` model
calls in flight, both give every step a ``lwt_step`` span under the layer's span. A step whose variables
cannot be filled does not call the model: its output is ``ERROR: ...`` (the ranking then falls back, see
``ranking.py``). A model failure is raised after the layer's other steps have finished.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from llamabot.models.base import ChatModel
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange, step_runner
from llamabot.models.messages import system, user
from llamabot.models.reply import ModelRequest
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


def _check_concurrency(concurrency: int) -> None:
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")


def _step_output(call: StepCall, model: ChatModel, params: dict[str, Any]) -> str:
    """One step, sync: its ``ERROR: ...`` output when it could not be filled, else the model's answer."""
    if call.prompt is None:
        return _error_output(call)
    with span(call.step.id, "lwt_step"):
        return run_exchange(step_exchange(model.name, call.prompt, params), model)


def _captured(call: StepCall, model: ChatModel, params: dict[str, Any]) -> str | BaseException:
    """:func:`_step_output`, its exception returned instead of raised (as ``gather(return_exceptions=True)``)."""
    try:
        return _step_output(call, model, params)
    except BaseException as exc:  # noqa: BLE001 - raised by _layer_outputs once every step has finished
        return exc


def _layer_outputs(calls: Sequence[StepCall], results: Sequence[str | BaseException]) -> dict[str, str]:
    """Step id -> output, once every step has finished; the first step's failure (in step order) is raised."""
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return {call.step.id: str(result) for call, result in zip(calls, results, strict=True)}


def run_layer(
    calls: Sequence[StepCall], model: ChatModel, params: dict[str, Any], concurrency: int = DEFAULT_CONCURRENCY
) -> dict[str, str]:
    """Run the steps at once in worker threads, at most ``concurrency`` model calls at a time (the sync twin of
    :func:`arun_layer`: the sync bot and the CLI overlap a layer's steps too). Each thread runs in a copy of the
    caller's context, so its step span nests under the layer's span. Inside a durable run (a step runner is set:
    its steps are recorded in order) the steps run one at a time. Returns step id -> output."""
    _check_concurrency(concurrency)
    calling = [call for call in calls if call.prompt is not None]
    if concurrency == 1 or len(calling) < 2 or step_runner() is not None:
        return _layer_outputs(calls, [_captured(call, model, params) for call in calls])
    with ThreadPoolExecutor(max_workers=min(concurrency, len(calling)), thread_name_prefix="anot-step") as pool:
        futures = [pool.submit(contextvars.copy_context().run, _captured, call, model, params) for call in calls]
        return _layer_outputs(calls, [future.result() for future in futures])


async def arun_layer(
    calls: Sequence[StepCall], model: ChatModel, params: dict[str, Any], concurrency: int = DEFAULT_CONCURRENCY
) -> dict[str, str]:
    """Run the steps concurrently, at most ``concurrency`` model calls at a time; returns step id -> output."""
    _check_concurrency(concurrency)
    limit = asyncio.Semaphore(concurrency)

    async def one(call: StepCall) -> str:
        if call.prompt is None:
            return _error_output(call)
        async with limit:
            with span(call.step.id, "lwt_step"):
                return await arun_exchange(step_exchange(model.name, call.prompt, params), model)

    return _layer_outputs(calls, await asyncio.gather(*(one(call) for call in calls), return_exceptions=True))

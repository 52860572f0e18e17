"""Phase 3's core: fill the steps of one layer and call the model for each LLM step, through the model seam (a
CHECK step is evaluated by the program while the layer is filled, see ``checks.py``).

One step is one exchange (``step_exchange``: yield a request, receive the reply, return its text), and one
layer is :func:`step_output` per step, run by the one layer logic (:mod:`llamabot.agents.layer`): :func:`run_layer`
(the sync bot, the CLI) runs them at once in worker threads, :func:`arun_layer` (the async bot) as tasks under
``asyncio.gather``; both hold at most ``concurrency`` model calls in flight (one at a time in a durable run),
both give every step a ``lwt_step`` span under the layer's span. A step whose variables cannot be filled does not
call the model: its output is ``ERROR: ...`` (the ranking then falls back, see ``ranking.py``). A model failure
is raised after the layer's other steps have finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from llamabot.agents.layer import arun_items, run_items
from llamabot.models.base import ChatModel
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.models.messages import system, user
from llamabot.models.reply import ModelRequest
from llamabot.observe.tracing import span
from llamabot.reasoning.anot.checks import CheckError, check_output
from llamabot.reasoning.anot.lwt import CHECK, LWTStep
from llamabot.reasoning.anot.prompts import STEP_SYSTEM
from llamabot.reasoning.anot.ranking import ERROR_PREFIX
from llamabot.reasoning.anot.substitution import SubstitutionContext, SubstitutionError, substitute

DEFAULT_CONCURRENCY = 8


@dataclass(frozen=True, slots=True)
class StepCall:
    """A step ready to run: an LLM step's filled prompt, a CHECK step's output (evaluated here, no model call),
    or the error that kept the step from being filled or evaluated."""

    step: LWTStep
    prompt: str | None
    error: str | None = None
    output: str | None = None


def fill_step(step: LWTStep, context: SubstitutionContext) -> StepCall:
    """One step of a layer: an LLM step's prompt filled from ``context``; a CHECK step evaluated over its items."""
    try:
        if step.kind == CHECK:
            return StepCall(step, None, output=check_output(step.check, context.items))
        return StepCall(step, substitute(step.prompt, context, step.id))
    except CheckError as exc:
        return StepCall(step, None, f"step {step.id!r}: {exc}")
    except SubstitutionError as exc:
        return StepCall(step, None, str(exc))


def fill_layer(layer: Sequence[LWTStep], context: SubstitutionContext) -> list[StepCall]:
    """Fill every step of ``layer`` from ``context`` (the outputs of earlier layers included)."""
    return [fill_step(step, context) for step in layer]


def prompt_exchange(model_name: str, system_prompt: str, prompt: str, params: dict[str, Any]) -> Exchange[str]:
    """One model call: a system prompt and one user prompt in, the reply's text out ("" for an empty reply)."""
    reply = yield ModelRequest(model=model_name, messages=[system(system_prompt), user(prompt)], params=params)
    return (reply.content or "").strip()


def step_exchange(model_name: str, prompt: str, params: dict[str, Any]) -> Exchange[str]:
    """One step's model call: the filled prompt in, the reply's text out."""
    return (yield from prompt_exchange(model_name, STEP_SYSTEM, prompt, params))


def _error_output(call: StepCall) -> str:
    return f"{ERROR_PREFIX}{call.error}"


def _check_concurrency(concurrency: int) -> None:
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")


def step_output(call: StepCall, model: ChatModel, params: dict[str, Any]) -> str:
    """One step, sync: ``ERROR: ...`` when the step could not be filled, a CHECK's output, else the model's
    answer (each step but an unfilled one in its ``lwt_step`` span)."""
    if call.prompt is None and call.output is None:
        return _error_output(call)
    with span(call.step.id, "lwt_step"):
        if call.output is not None:
            return call.output
        return run_exchange(step_exchange(model.name, call.prompt, params), model)


async def astep_output(call: StepCall, model: ChatModel, params: dict[str, Any]) -> str:
    """Async twin of :func:`step_output`."""
    if call.prompt is None and call.output is None:
        return _error_output(call)
    with span(call.step.id, "lwt_step"):
        if call.output is not None:
            return call.output
        return await arun_exchange(step_exchange(model.name, call.prompt, params), model)


def layer_outputs(calls: Sequence[StepCall], outputs: Sequence[str]) -> dict[str, str]:
    """Step id -> output."""
    return {call.step.id: output for call, output in zip(calls, outputs, strict=True)}


def run_layer(
    calls: Sequence[StepCall], model: ChatModel, params: dict[str, Any], concurrency: int = DEFAULT_CONCURRENCY
) -> dict[str, str]:
    """Run the steps at once in worker threads, at most ``concurrency`` model calls at a time (the sync twin of
    :func:`arun_layer`: the sync bot and the CLI overlap a layer's steps too). Each thread runs in a copy of the
    caller's context, so its step span nests under the layer's span. Inside a durable run (a step runner is set:
    its steps are recorded in order) the steps run one at a time. Returns step id -> output."""
    _check_concurrency(concurrency)
    return layer_outputs(calls, run_items(calls, partial(step_output, model=model, params=params), concurrency))


async def arun_layer(
    calls: Sequence[StepCall], model: ChatModel, params: dict[str, Any], concurrency: int = DEFAULT_CONCURRENCY
) -> dict[str, str]:
    """Run the steps concurrently, at most ``concurrency`` model calls at a time; returns step id -> output."""
    _check_concurrency(concurrency)
    work = partial(astep_output, model=model, params=params)
    return layer_outputs(calls, await arun_items(calls, work, concurrency))

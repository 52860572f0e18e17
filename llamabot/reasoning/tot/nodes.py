"""The driver's graph nodes: thin adapters between the pure machine and the model seam.

    expand -("generate")-> generate -("expand")-> expand
    expand -("evaluate")-> evaluate -("expand")-> expand          expand -> None when the machine has finished

- :class:`ExpandNode` feeds the last message to ``update`` (pure) and routes on the directive it gets back;
- :class:`ThoughtCallNode` turns that directive into one model call (through an exchange, so the sync and async
  twins share every line but the call) and the reply into an ``LLMResult`` message.

Both are :class:`DualNode`s and keep no per-run attribute: the run's state lives in the shared dict.

| key | meaning |
|---|---|
| ``machine`` | the current :class:`ToTMachine` (replaced on every update, never mutated) |
| ``message`` | the next message for the machine (``Start``, then each ``LLMResult``) |
| ``directive`` | the model directive the next call node performs |

Live values (the run's context): ``stream_target``, a callable receiving streamed text pieces, or ``None``.
Step callbacks are hooks on the ``tot_update`` spans of :class:`ExpandNode` (see ``machine_steps``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llamabot.graph.flow import DualNode
from llamabot.models.base import ChatModel, TokenCallback
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.models.reply import ModelRequest
from llamabot.observe.tracing import current_run
from llamabot.reasoning.tot.machine import Env, Status, ToTError, update
from llamabot.reasoning.tot.messages import (
    LLMPartial,
    LLMResult,
    Message,
    ModelDirective,
    RequestError,
    phase_of,
)
from llamabot.reasoning.tot.prompts import ToTPrompts

GoalTest = Callable[[str, tuple[str, ...]], bool]


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


@dataclass(slots=True)
class CallInput:
    directive: ModelDirective
    request: ModelRequest
    on_token: TokenCallback | None


def _partials(shared: dict[str, Any], call_id: str, target: TokenCallback) -> TokenCallback:
    """A token callback that feeds each piece to the machine as ``llm_partial`` and to ``target``."""

    def on_token(piece: str) -> None:
        shared["machine"], _ = update(shared["machine"], LLMPartial(call_id, piece))
        target(piece)

    return on_token


class ThoughtCallNode(DualNode):
    """Perform the pending generation or evaluation directive (or its repair) as one model call (a ``tot_step``
    span of the run)."""

    span_kind = "tot_step"

    def __init__(
        self,
        name: str,
        model: ChatModel,
        prompts: ToTPrompts,
        *,
        json_output: bool = True,
        completion_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.name = name
        self.model = model
        self.prompts = prompts
        self.json_output = json_output
        self.completion_kwargs = completion_kwargs or {}

    def prep(self, shared: dict[str, Any]) -> CallInput:
        directive: ModelDirective = shared["directive"]
        request = ModelRequest(
            model=self.model.name,
            messages=self.prompts.messages(directive),
            response_format=self.prompts.response_format(directive) if self.json_output else None,
            params=self.completion_kwargs,
        )
        run = current_run()
        target = run.values.get("stream_target") if run is not None else None
        on_token = _partials(shared, directive.call_id, target) if target is not None else None
        return CallInput(directive, request, on_token)

    def _exchange(self, inp: CallInput) -> Exchange[LLMResult]:
        reply = yield inp.request
        usage = {"prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens}
        text = self.prompts.read_reply(inp.directive, reply.content or "")
        return LLMResult(inp.directive.call_id, text=text, usage=usage)

    def span_attributes(self, inp: CallInput) -> dict[str, Any]:
        d = inp.directive
        return {"call_id": d.call_id, "phase": phase_of(d), "repair": type(d).__name__ == "CallLLMStream"}

    def exec(self, inp: CallInput) -> LLMResult:
        try:
            return run_exchange(self._exchange(inp), self.model, inp.on_token)
        except Exception as exc:  # noqa: BLE001 - a failed call is a message: the machine ends in `error`
            return LLMResult(inp.directive.call_id, error=f"{type(exc).__name__}: {exc}")

    async def exec_async(self, inp: CallInput) -> LLMResult:
        try:
            return await arun_exchange(self._exchange(inp), self.model, inp.on_token)
        except Exception as exc:  # noqa: BLE001 - a failed call is a message: the machine ends in `error`
            return LLMResult(inp.directive.call_id, error=f"{type(exc).__name__}: {exc}")

    def post(self, shared: dict[str, Any], inp: CallInput, result: LLMResult) -> str:
        shared["message"] = result
        return "expand"


class ExpandNode(DualNode):
    """Apply the pending message to the machine and route on the resulting directive.

    ``goal_test`` (optional, trusted) lets the machine stop with ``success``; ``step_check`` (optional) is the
    problem's rules (see :class:`~llamabot.reasoning.tot.machine.Env`); ``clock`` gives the time in ms.
    """

    name = "expand"
    span_kind = "tot_update"

    def __init__(self, goal_test: GoalTest | None = None, clock: Callable[[], float] = monotonic_ms,
                 step_check: Callable[[str, tuple[str, ...], str], str | None] | None = None):
        super().__init__()
        self.goal_test = goal_test
        self.step_check = step_check
        self.clock = clock

    def prep(self, shared: dict[str, Any]) -> Message:
        return shared["message"]

    def exec(self, msg: Message) -> Message:
        return msg

    async def exec_async(self, msg: Message) -> Message:
        return msg

    def post(self, shared: dict[str, Any], msg: Message, _: Message) -> str | None:
        machine, directives = update(shared["machine"], msg, Env(now_ms=self.clock(), goal_test=self.goal_test,
                                                                     step_check=self.step_check))
        shared["machine"], shared["message"] = machine, None
        refused = [d for d in directives if isinstance(d, RequestError)]
        if refused:
            raise ToTError(f"the search did not start ({refused[0].reason}): {refused[0].message}")
        if not directives:
            if machine.status in (Status.COMPLETED, Status.ERROR):
                return None
            raise ToTError(f"the machine ignored {type(msg).__name__} in state {machine.status.value!r}")
        shared["directive"] = directives[0]
        return "generate" if phase_of(directives[0]) == "generation" else "evaluate"

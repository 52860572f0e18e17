"""The driver's graph nodes: thin adapters between the pure machine and the model seam.

    expand -("generate")-> generate -("expand")-> expand
    expand -("evaluate")-> evaluate -("expand")-> expand          expand -> None when the machine has finished

- :class:`ExpandNode` feeds the round's messages to ``update`` (pure), in the order of the directives that asked
  for them, and routes on the directives it gets back (``generate`` when one of them is a generation);
- :class:`ThoughtCallNode` turns a round's directives into model calls (one exchange each, so the sync and async
  twins share every line but the call), side by side (the agents' layer: threads or ``gather``) when the search
  expands several nodes at once, and each reply into an ``LLMResult`` message.

Both keep no per-run attribute: the run's state lives in the shared dict.

| key | meaning |
|---|---|
| ``machine`` | the current :class:`ToTMachine` (replaced on every update, never mutated) |
| ``messages`` | the messages for the machine's next update (``Start``, then the round's ``LLMResult`` s) |
| ``directives`` | the model directives the next call node performs (one round) |

Live values (the run's context): ``stream_target``, a callable receiving streamed text pieces, or ``None``.
Step callbacks are hooks on the ``tot_update`` spans of :class:`ExpandNode` (see ``machine_steps``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llamabot.agents.layer import LayerNode
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


def _partials(shared: dict[str, Any], call_id: str, target: TokenCallback, lock: threading.Lock) -> TokenCallback:
    """A token callback that feeds each piece to the machine as ``llm_partial`` and to ``target`` (the round's
    calls may stream from several threads: one lock per round orders their updates)."""

    def on_token(piece: str) -> None:
        with lock:
            shared["machine"], _ = update(shared["machine"], LLMPartial(call_id, piece))
            target(piece)

    return on_token


class ThoughtCallNode(LayerNode):
    """Perform the round's generation or evaluation directives (or repairs), one model call each, at most
    ``limit`` at once (a ``tot_step`` span of the run per round; each call its own ``model_call`` span)."""

    span_kind = "tot_step"

    def __init__(
        self,
        name: str,
        model: ChatModel,
        prompts: ToTPrompts,
        *,
        json_output: bool = True,
        completion_kwargs: dict[str, Any] | None = None,
        limit: int = 1,
    ):
        super().__init__(limit)
        self.name = name
        self.model = model
        self.prompts = prompts
        self.json_output = json_output
        self.completion_kwargs = completion_kwargs or {}

    def prep(self, shared: dict[str, Any]) -> list[CallInput]:
        run = current_run()
        target = run.values.get("stream_target") if run is not None else None
        lock = threading.Lock()
        calls = []
        for directive in shared["directives"]:
            request = ModelRequest(
                model=self.model.name,
                messages=self.prompts.messages(directive),
                response_format=self.prompts.response_format(directive) if self.json_output else None,
                params=self.completion_kwargs,
            )
            on_token = _partials(shared, directive.call_id, target, lock) if target is not None else None
            calls.append(CallInput(directive, request, on_token))
        return calls

    def items(self, calls: list[CallInput]) -> Sequence[CallInput]:
        return calls

    def _exchange(self, inp: CallInput) -> Exchange[LLMResult]:
        reply = yield inp.request
        usage = {"prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens}
        text = self.prompts.read_reply(inp.directive, reply.content or "")
        return LLMResult(inp.directive.call_id, text=text, usage=usage)

    def span_attributes(self, calls: list[CallInput]) -> dict[str, Any]:
        directives = [c.directive for c in calls]
        return {"call_id": ", ".join(d.call_id for d in directives),
                "phase": ", ".join(sorted({phase_of(d) for d in directives})),
                "repair": any(type(d).__name__ == "CallLLMStream" for d in directives), "calls": len(directives)}

    def run_item(self, calls: list[CallInput], inp: CallInput) -> LLMResult:
        try:
            return run_exchange(self._exchange(inp), self.model, inp.on_token)
        except Exception as exc:  # noqa: BLE001 - a failed call is a message: the machine ends in `error`
            return LLMResult(inp.directive.call_id, error=f"{type(exc).__name__}: {exc}")

    async def arun_item(self, calls: list[CallInput], inp: CallInput) -> LLMResult:
        try:
            return await arun_exchange(self._exchange(inp), self.model, inp.on_token)
        except Exception as exc:  # noqa: BLE001 - a failed call is a message: the machine ends in `error`
            return LLMResult(inp.directive.call_id, error=f"{type(exc).__name__}: {exc}")

    def post(self, shared: dict[str, Any], calls: list[CallInput], results: list[LLMResult]) -> str:
        shared["messages"] = results
        return "expand"


class ExpandNode(DualNode):
    """Apply the round's messages to the machine, in order, and route on the resulting directives.

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

    def prep(self, shared: dict[str, Any]) -> list[Message]:
        return list(shared["messages"])

    def exec(self, msgs: list[Message]) -> list[Message]:
        return msgs

    async def exec_async(self, msgs: list[Message]) -> list[Message]:
        return msgs

    def post(self, shared: dict[str, Any], msgs: list[Message], _: list[Message]) -> str | None:
        env = Env(now_ms=self.clock(), goal_test=self.goal_test, step_check=self.step_check)
        machine, directives = shared["machine"], []
        for msg in msgs:
            machine, out = update(machine, msg, env)
            directives.extend(out)
        shared["machine"], shared["messages"] = machine, []
        refused = [d for d in directives if isinstance(d, RequestError)]
        if refused:
            raise ToTError(f"the search did not start ({refused[0].reason}): {refused[0].message}")
        if machine.status in (Status.COMPLETED, Status.ERROR):
            return None
        if not directives:
            kinds = ", ".join(type(m).__name__ for m in msgs) or "no message"
            raise ToTError(f"the machine ignored {kinds} in state {machine.status.value!r}")
        shared["directives"] = directives
        return "generate" if any(phase_of(d) == "generation" for d in directives) else "evaluate"

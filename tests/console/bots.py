"""Bot factories of the console tests, importable by spec from a worker process.

``make_payment_agent``: its first call is ``transfer(amount=10.0, to=<the question>)`` (approval needed), then
it answers with the tool's result: the question flows into a tool argument, so a hostile question is a hostile
argument. ``make_failing_agent``: its tool always raises, then it answers.
"""

from __future__ import annotations

import json
import os

from llamabot import AgentBot, tool
from llamabot.models.reply import ModelReply, ModelRequest, ToolCallRequest, Usage
from tests.durable.agents import record, transfer


@tool
def lookup(key: str) -> str:
    """Look a key up (always fails: the page must show the error).

    Args:
        key: What to look up.
    """
    raise KeyError(f"no entry {key!r}")


class ScriptedCalls:
    """A model whose reply to a request is one tool call, ``call(request)``: ``(tool name, arguments)``."""

    name = "scripted"

    def call(self, request: ModelRequest) -> tuple[str, dict]:
        raise NotImplementedError

    def _reply(self, request: ModelRequest) -> ModelReply:
        name, arguments = self.call(request)
        done = sum(m.get("role") == "tool" for m in request.messages)
        return ModelReply(content=None, finish_reason="tool_calls", usage=self.usage,
                          tool_calls=(ToolCallRequest(f"call_{done}", name, json.dumps(arguments)),))

    def complete(self, request: ModelRequest, on_token=None) -> ModelReply:
        return self._reply(request)

    async def acomplete(self, request: ModelRequest, on_token=None) -> ModelReply:
        return self._reply(request)


class PaymentModel(ScriptedCalls):
    """Calls ``first`` with the question as its argument ``argument``, then answers with the tool's result."""

    usage = Usage(120, 30, 0.0015)

    def __init__(self, first: str, argument: str, extra: dict | None = None):
        self.name, self.first, self.argument, self.extra = "payments-model", first, argument, extra or {}

    def call(self, request: ModelRequest) -> tuple[str, dict]:
        results = [m["content"] for m in request.messages if m.get("role") == "tool"]
        if not results:
            return self.first, {**self.extra, self.argument: request.last_user_text}
        return "respond_to_user", {"response": f"done: {results[-1]}"}


def make_payment_agent() -> AgentBot:
    return AgentBot(tools=[transfer], model=PaymentModel("transfer", "to", {"amount": 10.0}))


def make_failing_agent() -> AgentBot:
    return AgentBot(tools=[lookup], model=PaymentModel("lookup", "key"), max_iterations=3)


class CountingModel(ScriptedCalls):
    """Calls ``record`` ``calls`` times, counting from the last tool result (``recorded N``: the conversation
    window may have dropped the earlier ones), then answers."""

    name, usage = "counting-model", Usage(50, 10)

    def __init__(self, calls: int):
        self.calls = calls

    def call(self, request: ModelRequest) -> tuple[str, dict]:
        results = [m["content"] for m in request.messages if m.get("role") == "tool"]
        done = int(results[-1].rsplit(" ", 1)[-1]) if results else 0
        if done < self.calls:
            return "record", {"step": done + 1, "run": "long"}
        return "respond_to_user", {"response": f"recorded {done} steps"}


def make_long_agent() -> AgentBot:
    """An agent of ``$CONSOLE_CALLS`` tool calls (default 665: with its answer, a run of 2,000 spans)."""
    calls = int(os.environ.get("CONSOLE_CALLS", "665"))
    return AgentBot(tools=[record], model=CountingModel(calls), max_iterations=calls + 2)

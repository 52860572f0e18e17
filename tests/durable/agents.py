"""Bot factories for the durable tests and benchmark: importable by spec from any process.

The model is deterministic from the conversation (not a queue), so a recovered run that replays some model calls
from the database and sends the rest gets the same replies. It appends ``start N`` / ``end N`` to the file
``$DURABLE_MODEL_LOG`` around each call (N: the tool results seen so far) and waits ``$DURABLE_LATENCY_S``.
Tools append one line per execution to ``$DURABLE_EFFECTS``; ``record`` also appends ``run|step|key`` to
``$DURABLE_KEYS``, where the key is the durable step's ``(run id, step number)`` (``current_step``): the same for
an attempt run again after a kill, so a consumer keyed by it sees each effect once.
"""

from __future__ import annotations

import asyncio
import json
import os
import time

from llamabot import AgentBot, tool
from llamabot.models.reply import ModelReply, ModelRequest, ToolCallRequest


def _append(env: str, line: str) -> None:
    path = os.environ.get(env)
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())


@tool
def record(step: int, run: str) -> str:
    """Record that a step of a run happened (a side effect).

    Args:
        step: The step number.
        run: The run's question.
    """
    _append("DURABLE_EFFECTS", f"{run}|{step}")
    if os.environ.get("DURABLE_KEYS"):
        from llamabot.durable import current_step

        key = current_step()
        _append("DURABLE_KEYS", f"{run}|{step}|{key[0]}:{key[1]}" if key else f"{run}|{step}|none")
    return f"recorded {step}"


@tool(requires_approval=True)
def transfer(amount: float, to: str) -> str:
    """Send money (needs a person's approval).

    Args:
        amount: How much.
        to: Who receives it.
    """
    _append("DURABLE_EFFECTS", f"transfer|{amount}|{to}")
    return f"sent {amount} to {to}"


class ConversationModel:
    """Calls ``record`` ``calls`` times (``transfer`` first when ``transfer`` is set), then answers with every tool
    result it saw."""

    def __init__(self, calls: int = 3, transfer: bool = False, name: str = "conversation"):
        self.name, self.calls, self.transfer = name, calls, transfer

    def _reply(self, request: ModelRequest) -> ModelReply:
        query = request.last_user_text
        results = [m["content"] for m in request.messages if m.get("role") == "tool"]
        done = len(results)
        if self.transfer and done == 0:
            call = ("transfer", {"amount": 10.0, "to": "alice"})
        elif done < self.calls + self.transfer:
            call = ("record", {"step": done + 1, "run": query})
        else:
            call = ("respond_to_user", {"response": f"{query} -> " + "; ".join(results)})
        return ModelReply(content=None, finish_reason="tool_calls",
                          tool_calls=(ToolCallRequest(f"call_{done}", call[0], json.dumps(call[1])),))

    def complete(self, request: ModelRequest, on_token=None) -> ModelReply:
        n = sum(m.get("role") == "tool" for m in request.messages)
        _append("DURABLE_MODEL_LOG", f"{request.last_user_text}|start {n}")
        time.sleep(float(os.environ.get("DURABLE_LATENCY_S", "0")))
        _append("DURABLE_MODEL_LOG", f"{request.last_user_text}|end {n}")
        return self._reply(request)

    async def acomplete(self, request: ModelRequest, on_token=None) -> ModelReply:
        n = sum(m.get("role") == "tool" for m in request.messages)
        _append("DURABLE_MODEL_LOG", f"{request.last_user_text}|start {n}")
        await asyncio.sleep(float(os.environ.get("DURABLE_LATENCY_S", "0")))
        _append("DURABLE_MODEL_LOG", f"{request.last_user_text}|end {n}")
        return self._reply(request)


def make_agent() -> AgentBot:
    """An agent that records ``$DURABLE_CALLS`` (default 3) side effects, then answers."""
    return AgentBot(tools=[record], model=ConversationModel(int(os.environ.get("DURABLE_CALLS", "3"))))


def make_approval_agent() -> AgentBot:
    """An agent whose first call is ``transfer`` (approval needed), then one ``record``."""
    return AgentBot(tools=[record, transfer], model=ConversationModel(1, transfer=True))


class TwoTransfersModel(ConversationModel):
    """Calls ``transfer`` twice (10 to alice, then 1000 to mallory: two approvals), then answers."""

    def _reply(self, request: ModelRequest) -> ModelReply:
        results = [m["content"] for m in request.messages if m.get("role") == "tool"]
        done = len(results)
        if done < 2:
            call = ("transfer", [{"amount": 10.0, "to": "alice"}, {"amount": 1000.0, "to": "mallory"}][done])
        else:
            call = ("respond_to_user", {"response": "; ".join(results)})
        return ModelReply(content=None, finish_reason="tool_calls",
                          tool_calls=(ToolCallRequest(f"call_{done}", call[0], json.dumps(call[1])),))


def make_two_approvals_agent() -> AgentBot:
    """An agent that calls ``transfer`` twice: two approvals, one after the other."""
    return AgentBot(tools=[transfer], model=TwoTransfersModel(name="two-transfers"))


def make_variant_agent() -> AgentBot:
    """``make_approval_agent`` whose model is named by ``$DURABLE_VARIANT``: a process that restarts with another
    variant runs other code than the one its runs started with."""
    return AgentBot(tools=[record, transfer],
                    model=ConversationModel(1, transfer=True, name=os.environ.get("DURABLE_VARIANT", "conversation")))

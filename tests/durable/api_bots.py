"""Bot factories for the durable tests of the public API's features (typed output, deps, agents as tools)."""

from __future__ import annotations

from pydantic import BaseModel

from llamabot import AgentBot, RunContext, ScriptedModel, tool
from llamabot.models.scripted import tool_call


class Point(BaseModel):
    x: int
    y: int


@tool
def whose(ctx: RunContext[str]) -> str:
    """Whose run this is."""
    return str(ctx.deps)


def _tool_results(request):
    return [m["content"] for m in request.messages if m["role"] == "tool"]


def _ask_then_answer(request):
    done = _tool_results(request)
    if not done:
        return tool_call("whose")
    return tool_call("respond_to_user", response={"x": 1, "y": len(done[-1])})


def make_typed() -> AgentBot:
    """Asks whose run it is, answers a Point whose y is the length of the deps."""
    return AgentBot(tools=[whose], model=ScriptedModel(responder=_ask_then_answer), output_type=Point)


def _delegating(tool: str, query: str):
    """A responder that calls ``tool`` with ``query`` once, then answers with its result."""

    def respond(request):
        done = _tool_results(request)
        if not done:
            return tool_call(tool, query=query)
        return tool_call("respond_to_user", response="outer: " + done[-1])

    return respond


_delegate = _delegating("helper", "say hi")


def make_outer() -> AgentBot:
    """An agent whose tool is another agent."""
    inner = AgentBot(model=ScriptedModel(responder=lambda r: tool_call("respond_to_user", response="inner says hi"),
                                         name="inner"))
    return AgentBot(tools=[inner.as_tool(name="helper", description="Helps.")],
                    model=ScriptedModel(responder=_delegate))


def make_outer_payer() -> AgentBot:
    """An agent whose tool is an agent that calls ``transfer`` (approval needed), then ``record``."""
    from tests.durable.agents import ConversationModel, record, transfer

    inner = AgentBot(tools=[record, transfer], model=ConversationModel(1, transfer=True, name="inner"))
    return AgentBot(tools=[inner.as_tool(name="payer", description="Pays people.")],
                    model=ScriptedModel(responder=_delegating("payer", "pay erin")))


def make_outer_with_timeout() -> AgentBot:
    """An agent whose agent tool has a timeout: refused for durable runs."""
    inner = AgentBot(model=ScriptedModel(responder=lambda r: tool_call("respond_to_user", response="hi"), name="inner"))
    return AgentBot(tools=[inner.as_tool(name="helper", description="Helps.", timeout=5)],
                    model=ScriptedModel(responder=_delegate))

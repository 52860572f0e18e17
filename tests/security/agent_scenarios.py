"""Scripted scenarios shared by the security tests: a model that calls one tool, then answers with what it saw."""

from __future__ import annotations

from llamabot import AgentBot, ScriptedModel
from llamabot.models.reply import ModelRequest
from llamabot.models.scripted import tool_call


def results_of_this_run(request: ModelRequest) -> list[dict]:
    """The ``tool`` messages after the last user message."""
    last_user = max(i for i, m in enumerate(request.messages) if m["role"] == "user")
    return [m for m in request.messages[last_user:] if m["role"] == "tool"]


def call_then_echo(name: str, **arguments):
    """A responder: call ``name(**arguments)`` once, then answer with the content of the tool result it saw."""

    def respond(request: ModelRequest):
        seen = results_of_this_run(request)
        if not seen:
            return tool_call(name, **arguments)
        return tool_call("respond_to_user", response=seen[-1]["content"])

    return respond


def agent(tools, responder, **options) -> tuple[AgentBot, ScriptedModel]:
    """An agent with ``tools`` on a scripted model answering with ``responder``; the bot and its model."""
    model = ScriptedModel(responder=responder)
    return AgentBot(tools, model=model, **options), model

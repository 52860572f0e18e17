"""What the decision node does with a model reply. Pure: no model, no graph, no I/O.

Rules (see docs/design/agentbot/reference-graph-EARS.md):
- every valid tool call in the reply is queued, in order, and runs without a new model call;
- an invalid call (unknown tool, bad JSON, arguments that do not match the schema) gets an error result the
  model sees on its next turn;
- a reply with text but no tool call is routed to ``respond_to_user`` (when registered; a typed one validates the
  text as its answer first);
- a reply with neither raises ``ValueError`` with a hint for the model family.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_core import from_json

from llamabot.agents.agent_state import PendingCall
from llamabot.bot.toolbot import ToolBotReply
from llamabot.errors import ToolArgumentsError
from llamabot.models.messages import Message, tool_result, user
from llamabot.tools.output import typed_output
from llamabot.tools.tool import Tool

RESPOND = "respond_to_user"

_FAMILY_HINTS = {
    "ollama": "Ollama models need a tool-capable model (e.g. qwen2.5, llama3.1) and tool_choice='auto'.",
    "local": "The embedded model is grammar-forced to call a tool; check max_tokens is large enough.",
    "scripted": "The scripted model returned an empty reply; queue a tool call or text.",
    "remote": "Check that the model supports tool calling (function calling) with tool_choice='required'.",
}


@dataclass(slots=True, init=False)
class Decision:
    """The outcome of one decision: calls to run, messages to append, or a retry after errors."""

    calls: list[PendingCall]
    messages: list[Message]
    errors: list[str]
    failed_raw: tuple[str, str] | None  # (tool, raw arguments) of the last invalid call

    def __init__(self, calls: list[PendingCall] | None = None, messages: list[Message] | None = None,
                 errors: list[str] | None = None, failed_raw: tuple[str, str] | None = None):
        self.calls = [] if calls is None else calls
        self.messages = [] if messages is None else messages
        self.errors = [] if errors is None else errors
        self.failed_raw = failed_raw


def decide(reply: ToolBotReply, tool_names: set[str] | dict, model_family: str) -> Decision:
    """Turn a ToolBot reply into a :class:`Decision`."""
    decision = Decision([], [reply.message], [])
    for call in reply.tool_calls:
        if call.error is None:  # valid (ToolCall.ok, without the property's call)
            decision.calls.append(PendingCall(call.id, call.name, call.arguments or {}, call.raw_arguments))
        else:
            decision.errors.append(call.error or "invalid call")
            decision.failed_raw = (call.name, call.raw_arguments)
            decision.messages.append(tool_result(call.id, call.name, f"Error: {call.error}. Fix the call and try again."))
    if reply.tool_calls:
        return decision
    text = (reply.content or "").strip()
    if text and RESPOND in tool_names:
        respond = tool_names[RESPOND] if isinstance(tool_names, dict) else None
        if typed_output(respond) is not None:  # a typed answer (output_type=): the text must be one
            return _typed_text(decision, respond, text)
        decision.calls.append(PendingCall("text_reply", RESPOND, {"response": text}, text, synthetic=True))
        return decision
    if text:
        raise ValueError(
            f"the model answered with text but no tool call, and no {RESPOND!r} tool is registered to deliver "
            f"it: {text[:200]!r}"
        )
    raise ValueError(
        "the model returned neither a tool call nor text. " + _FAMILY_HINTS.get(model_family, _FAMILY_HINTS["remote"])
    )


def _typed_text(decision: Decision, respond: Tool, text: str) -> Decision:
    """A text reply where the answer is typed: the text (JSON, or else the text itself) validated as the answer;
    when it is not one, the error is shown to the model, which is asked again."""
    try:
        value = from_json(text)
    except ValueError:
        value = text
    try:
        arguments = respond.validate({"response": value})
    except ToolArgumentsError as exc:
        decision.errors.append(str(exc))
        decision.failed_raw = (RESPOND, text)
        decision.messages.append(user(f"Error: {exc}. Give your final answer by calling {RESPOND} with a response "
                                      "that matches its schema."))
        return decision
    decision.calls.append(PendingCall("text_reply", RESPOND, arguments, text, synthetic=True))
    return decision

"""ToolBot / AsyncToolBot: one model turn that picks tools.

The bot sends proper chat messages (the conversation, including assistant turns with ``tool_calls`` and
``tool``-role results), offers the tools' schemas, and returns every tool call as a name plus validated
arguments. A call the model wrote as JSON in its text is recognised too. Problems (unknown tool, invalid JSON,
arguments that do not match the schema) are reported per call in ``ToolCall.error``, never raised, so the
caller (the agent graph) can send them back to the model.

Tool choice: ``"required"`` by default, so the model must call a tool (the embedded local provider then
constrains the output with a grammar over the tools' argument schemas, so its calls are valid by
construction). Ollama models get ``"auto"`` plus a system-prompt reminder, since Ollama does not support
forcing a tool call.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from llamabot.bot.options import bot_settings, check_shared, strict_options
from llamabot.errors import ToolArgumentsError
from llamabot.models.base import ChatModel
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.models.messages import Message, assistant, system, to_messages
from llamabot.models.reply import ModelReply, ModelRequest, ToolCallRequest, Usage
from llamabot.models.resolve import get_model, model_family
from llamabot.models.settings import ModelSettings
from llamabot.models.tool_call_text import extract_tool_calls
from llamabot.observe.hooks import RunHooks, hook_tuple
from llamabot.observe.tracing import Trace, run
from llamabot.observe.usage import UsageLimits
from llamabot.tools.tool import Tool, tools_by_name

OLLAMA_TOOL_REMINDER = (
    "\n\nYou must answer by calling exactly one of the provided tools, with arguments that match its schema."
)


@dataclass(slots=True)
class ToolCall:
    """One tool call from the model: ``arguments`` are validated (``None`` when ``error`` says why not)."""

    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class ToolBotReply:
    """The outcome of one ToolBot turn."""

    tool_calls: tuple[ToolCall, ...]
    content: str | None
    message: Message  # the assistant message to append to the conversation
    usage: Usage
    from_text: bool = False  # the calls were recognised in the text content

    @property
    def first(self) -> ToolCall | None:
        return self.tool_calls[0] if self.tool_calls else None


def parse_tool_calls(reply: ModelReply, tools: dict[str, Tool]) -> ToolBotReply:
    """Turn a model reply into validated tool calls. Pure: shared by the sync and async bots."""
    requests = reply.tool_calls
    from_text = False
    if not requests and reply.content:
        found = extract_tool_calls(reply.content, tools.keys())
        if found:
            from_text = True
            # ids unique in the conversation: a later reply's call must not take an earlier call's id (its result,
            # its approval decision); as the embedded model's, since the text carries none
            requests = tuple(ToolCallRequest(f"call_text_{uuid.uuid4().hex[:12]}", name, args) for name, args in found)
    if len(requests) == 1:  # the usual reply: one call
        calls: tuple[ToolCall, ...] = (validate_call(requests[0], tools),)
    else:
        calls = tuple(validate_call(request, tools) for request in requests)
    content = None if from_text else reply.content
    return ToolBotReply(calls, content, assistant(content, requests), reply.usage, from_text)


def validate_call(request: ToolCallRequest, tools: dict[str, Tool]) -> ToolCall:
    """Validate one call against the registered tools; errors are reported, not raised."""
    tool = tools.get(request.name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "(none)"
        return ToolCall(
            request.id, request.name, request.arguments, None,
            f"unknown tool {request.name!r}; available tools: {available}",
        )
    try:
        arguments = tool.validate(request.arguments)
    except ToolArgumentsError as exc:
        return ToolCall(request.id, request.name, request.arguments, None, str(exc))
    return ToolCall(request.id, request.name, request.arguments, arguments)


class ToolBot:
    """Ask the model to pick tools for the conversation so far. ``bot(*messages)`` -> :class:`ToolBotReply`.

    ``system_prompt`` (the one positional argument). ``tools``: ``@tool`` functions (or :class:`Tool` objects).
    ``tool_choice``: ``"required"`` (default), ``"auto"``, or a tool name to force that tool. ``model``,
    ``model_settings``, ``hooks``, ``usage_limits``: as for every bot (:class:`~llamabot.bot.simplebot.SimpleBot`).
    An unknown keyword is a ``TypeError``.
    """

    @strict_options
    def __init__(
        self,
        system_prompt: str = "",
        *,
        tools: Iterable[Any] = (),
        model: str | ChatModel | None = None,
        model_settings: ModelSettings | dict[str, Any] | None = None,
        tool_choice: str | None = None,
        hooks: Iterable[RunHooks] = (),
        usage_limits: UsageLimits | None = None,
    ):
        check_shared(type(self).__name__, system_prompt=system_prompt, usage_limits=usage_limits)
        self.model = get_model(model)
        self.model_name = self.model.name
        self.tools: dict[str, Tool] = tools_by_name(tools)
        family = model_family(self.model)
        if tool_choice is None:
            tool_choice = "auto" if family == "ollama" else "required"
        if family == "ollama":
            system_prompt = system_prompt + OLLAMA_TOOL_REMINDER
        if tool_choice not in ("auto", "required", "none") and tool_choice not in self.tools:
            raise ValueError(f"tool_choice {tool_choice!r} is not 'auto', 'required' or a registered tool name")
        self.system_prompt = system_prompt
        self.tool_choice = tool_choice
        self.model_settings = bot_settings(self, model_settings)
        self.hooks: tuple[RunHooks, ...] = hook_tuple(hooks, type(self).__name__)
        self.usage_limits = usage_limits
        self.schemas = [t.json_schema for t in self.tools.values()]
        self._system_message = system(system_prompt)
        self._choice = self._tool_choice_param()
        self.last_trace: Trace | None = None

    def _tool_choice_param(self) -> Any:
        if self.tool_choice in ("auto", "required", "none"):
            return self.tool_choice
        return {"type": "function", "function": {"name": self.tool_choice}}

    def _exchange(self, messages: tuple[Any, ...]) -> Exchange[ToolBotReply]:
        return (yield from self.exchange_messages(to_messages(messages)))

    def request(self, conversation: list[Message]) -> ModelRequest:
        """The model request of a turn over chat messages that are already normalised (the agent's memory)."""
        if self.system_prompt and not (conversation and conversation[0].get("role") == "system"):
            conversation = [self._system_message, *conversation]
        # model, messages, tools, tool_choice, response_format, params (positional: on every decision's path)
        return ModelRequest(self.model_name, conversation, self.schemas, self._choice, None, self.model_settings)

    def exchange_messages(self, conversation: list[Message]) -> Exchange[ToolBotReply]:
        """The turn as an exchange over chat messages that are already normalised (the agent's memory)."""
        reply = yield self.request(conversation)
        return parse_tool_calls(reply, self.tools)

    def turn(self, conversation: list[Message]) -> ToolBotReply:
        """Take the turn synchronously: :meth:`exchange_messages` driven by :func:`run_exchange`."""
        return run_exchange(self.exchange_messages(conversation), self.model)

    async def aturn(self, conversation: list[Message]) -> ToolBotReply:
        """Async twin of :meth:`turn`."""
        return await arun_exchange(self.exchange_messages(conversation), self.model)

    def __call__(self, *messages: Any) -> ToolBotReply:
        with run(type(self).__name__, hooks=self.hooks, limits=self.usage_limits) as trace:
            self.last_trace = trace
            return run_exchange(self._exchange(messages), self.model)


class AsyncToolBot(ToolBot):
    """Async twin of :class:`ToolBot`: ``await bot(*messages)``."""

    async def __call__(self, *messages: Any) -> ToolBotReply:  # type: ignore[override]
        with run(type(self).__name__, hooks=self.hooks, limits=self.usage_limits) as trace:
            self.last_trace = trace
            return await arun_exchange(self._exchange(messages), self.model)

"""SimpleBot: a system prompt plus one model call. ``AsyncSimpleBot`` is the async twin."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llamabot.bot.options import bot_settings, check_shared, strict_options
from llamabot.errors import ModelCallError
from llamabot.models.base import ChatModel, TokenCallback
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange
from llamabot.models.messages import AIMessage, system, to_messages
from llamabot.models.reply import ModelRequest
from llamabot.models.resolve import get_model
from llamabot.models.settings import ModelSettings
from llamabot.observe.hooks import RunHooks, hook_tuple
from llamabot.observe.tracing import Trace, run
from llamabot.observe.usage import UsageLimits


class SimpleBot:
    """Answer messages under a system prompt.

    ``system_prompt`` (the one positional argument). ``model``: any LiteLLM model string (``gpt-4.1-mini``,
    ``ollama_chat/qwen2.5``, ``local/...``), a chat model object such as ``ScriptedModel``, or ``None`` for the
    default (``$LLAMABOT_MODEL``, else the embedded local model). ``model_settings``: provider settings
    (``temperature``, ``max_tokens``, ``api_base``, ``api_key``...; see :class:`ModelSettings`), the only values
    that reach the provider. ``stream_target``: a callable receiving text pieces as they arrive (off by default).
    ``hooks``: lifecycle hooks told about every call; ``usage_limits``: limits every call obeys. An unknown
    keyword is a ``TypeError``.
    """

    @strict_options
    def __init__(
        self,
        system_prompt: str = "",
        *,
        model: str | ChatModel | None = None,
        model_settings: ModelSettings | dict[str, Any] | None = None,
        stream_target: TokenCallback | None = None,
        hooks: Iterable[RunHooks] = (),
        usage_limits: UsageLimits | None = None,
    ):
        check_shared(type(self).__name__, system_prompt=system_prompt, usage_limits=usage_limits)
        self.system_prompt = system_prompt
        self.model = get_model(model)
        self.model_name = self.model.name
        self.stream_target = stream_target
        self.model_settings = bot_settings(self, model_settings)
        self.hooks: tuple[RunHooks, ...] = hook_tuple(hooks, type(self).__name__)
        self.usage_limits = usage_limits
        self.last_trace: Trace | None = None

    def _run(self) -> run:
        """The run scope of one call (its trace, hooks and limits)."""
        return run(type(self).__name__, hooks=self.hooks, limits=self.usage_limits)

    def _request(self, messages: list[dict[str, Any]], **extra: Any) -> ModelRequest:
        return ModelRequest(
            model=self.model_name,
            messages=[system(self.system_prompt), *messages] if self.system_prompt else messages,
            params=self.model_settings,
            **extra,
        )

    def exchange(self, *messages: Any) -> Exchange[Any]:
        """The bot's logic as a generator exchange (it yields model requests and returns the bot's result), for
        nodes that drive it with ``run_exchange``/``arun_exchange`` inside their own spans."""
        return self._exchange(messages)

    def _exchange(self, messages: tuple[Any, ...]) -> Exchange[AIMessage]:
        reply = yield self._request(to_messages(messages))
        if not reply.content:
            raise ModelCallError(f"{self.model_name} returned an empty reply (finish_reason={reply.finish_reason!r})")
        return AIMessage(reply.content, reply.usage, reply.model)

    def __call__(self, *messages: Any) -> AIMessage:
        """Send the messages (strings become user messages) and return the assistant's reply."""
        with self._run() as trace:
            self.last_trace = trace
            return run_exchange(self._exchange(messages), self.model, self.stream_target)


class AsyncSimpleBot(SimpleBot):
    """Async twin of :class:`SimpleBot`: ``await bot(...)``."""

    async def __call__(self, *messages: Any) -> AIMessage:  # type: ignore[override]
        with self._run() as trace:
            self.last_trace = trace
            return await arun_exchange(self._exchange(messages), self.model, self.stream_target)

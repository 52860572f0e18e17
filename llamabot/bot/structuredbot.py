"""StructuredBot: the model's answer as a validated pydantic instance, repaired by re-prompting.

The pydantic model's JSON schema goes to the provider as ``response_format`` (the embedded local provider
enforces it by grammar). Output that fails validation is sent back with the errors, a bounded number of
times; then :class:`StructuredOutputError` is raised holding the last raw output.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from llamabot.bot.options import not_a_model, strict_options
from llamabot.bot.simplebot import AsyncSimpleBot, SimpleBot
from llamabot.errors import StructuredOutputError
from llamabot.models.base import ChatModel, TokenCallback
from llamabot.models.exchange import Exchange
from llamabot.models.messages import assistant, to_messages, user
from llamabot.models.settings import ModelSettings
from llamabot.models.text_fences import fenced_blocks
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import log_debug
from llamabot.observe.usage import UsageLimits

M = TypeVar("M", bound=BaseModel)


def response_format_for(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI ``response_format`` asking for JSON that matches ``model``'s schema."""
    return {
        "type": "json_schema",
        "json_schema": {"name": model.__name__, "schema": model.model_json_schema()},
    }


def parse_structured(model: type[M], raw: str | None) -> M:
    """Validate ``raw`` as ``model``; accepts a fenced JSON block around the object (the first one). Raises
    ValidationError or ValueError (empty output), whatever the text: pydantic-core bounds the nesting depth
    and the size of numbers, and the fence is found in linear time."""
    if raw is None or not raw.strip():
        raise ValueError("the reply was empty; answer with a JSON object")
    try:
        return model.model_validate_json(raw)
    except ValidationError:
        fenced = fenced_blocks(raw)
        if not fenced:
            raise
        return model.model_validate_json(fenced[0])


def _errors_of(exc: Exception) -> list[str]:
    if isinstance(exc, ValidationError):
        return [
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors(include_url=False)
        ]
    return [str(exc)]


class StructuredBot(SimpleBot, Generic[M]):
    """Return a validated ``output_type`` instance (a pydantic model) for the given messages (``bot(*messages)``).

    ``system_prompt`` and ``output_type`` are the positional arguments; the other options are
    :class:`SimpleBot`'s, as keywords. ``max_repairs``: how many times invalid output is sent back with its errors
    before giving up (default 2, so at most 3 model calls).
    """

    @strict_options
    def __init__(
        self,
        system_prompt: str = "",
        output_type: type[M] | None = None,
        *,
        model: str | ChatModel | None = None,
        model_settings: ModelSettings | dict[str, Any] | None = None,
        max_repairs: int = 2,
        stream_target: TokenCallback | None = None,
        hooks: Iterable[RunHooks] = (),
        usage_limits: UsageLimits | None = None,
    ):
        if not (isinstance(output_type, type) and issubclass(output_type, BaseModel)):
            not_a_model(type(self).__name__, "output_type", output_type)
            raise TypeError(f"{type(self).__name__} needs output_type, a pydantic model class; got {output_type!r:.100}")
        if isinstance(max_repairs, bool) or not isinstance(max_repairs, int) or max_repairs < 0:
            raise ValueError(f"max_repairs must be a whole number >= 0, got {max_repairs!r}")
        super().__init__(system_prompt, model=model, model_settings=model_settings, stream_target=stream_target,
                         hooks=hooks, usage_limits=usage_limits)
        self.output_type = output_type
        self.max_repairs = max_repairs
        self.response_format = response_format_for(output_type)

    @property
    def pydantic_model(self) -> type[M]:
        """The old name of :attr:`output_type`."""
        return self.output_type  # type: ignore[return-value]

    def _exchange(self, messages: tuple[Any, ...]) -> Exchange[M]:  # type: ignore[override]
        conversation = to_messages(messages)
        raw: str | None = None
        errors: list[str] = []
        for _attempt in range(self.max_repairs + 1):
            reply = yield self._request(conversation, response_format=self.response_format)
            raw = reply.content
            try:
                return parse_structured(self.pydantic_model, raw)
            except (ValidationError, ValueError) as exc:
                errors = _errors_of(exc)
            log_debug("{}: invalid structured output (attempt {} of {}): {}", self.pydantic_model.__name__,
                      _attempt + 1, self.max_repairs + 1, "; ".join(errors))
            conversation = [
                *conversation,
                assistant(raw or ""),
                user(
                    "That output is not valid. Errors:\n- " + "\n- ".join(errors)
                    + "\nReply again with only a JSON object that matches the schema."
                ),
            ]
        raise StructuredOutputError(self.model_name, self.max_repairs + 1, raw, errors)


class AsyncStructuredBot(StructuredBot[M]):
    """Async twin of :class:`StructuredBot`: ``await bot(...)`` returns the validated instance."""

    __call__ = AsyncSimpleBot.__call__  # type: ignore[assignment]

"""StructuredBot: the model's answer as a validated pydantic instance, repaired by re-prompting.

The pydantic model's JSON schema goes to the provider as ``response_format`` (the embedded local provider
enforces it by grammar). Output that fails validation is sent back with the errors, a bounded number of
times; then :class:`StructuredOutputError` is raised holding the last raw output.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from llamabot.bot.simplebot import AsyncSimpleBot, SimpleBot
from llamabot.errors import StructuredOutputError
from llamabot.models.exchange import Exchange
from llamabot.models.messages import assistant, to_messages, user
from llamabot.models.seam import ChatModel
from llamabot.models.text_fences import fenced_blocks
from llamabot.observe.tracing import log_debug

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
    """Return a validated ``pydantic_model`` instance for the given messages (``bot(*messages)``).

    ``max_repairs``: how many times invalid output is sent back with its errors before giving up (default 2,
    so at most 3 model calls).
    """

    def __init__(
        self,
        system_prompt: str,
        pydantic_model: type[M],
        model_name: str | ChatModel | None = None,
        max_repairs: int = 2,
        **completion_kwargs: Any,
    ):
        super().__init__(system_prompt, model_name, **completion_kwargs)
        self.pydantic_model = pydantic_model
        self.max_repairs = max_repairs
        self.response_format = response_format_for(pydantic_model)

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

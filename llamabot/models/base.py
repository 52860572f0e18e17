"""What every chat model is: the :class:`ChatModel` protocol (``complete`` and its async twin ``acomplete``, both
returning a :class:`~llamabot.models.reply.ModelReply`), :class:`StringModel` (a model named by a model string,
with default call parameters) and :func:`provider_errors` (a provider's exception as a typed
:class:`~llamabot.errors.ModelCallError`). No model is called here and nothing is resolved: see
:mod:`llamabot.models.resolve` (``get_model``) and :mod:`llamabot.models.seam` (``call_model``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

from llamabot.errors import LlamabotError, ModelCallError
from llamabot.models.reply import ModelReply, ModelRequest

#: What a streaming model calls with each piece of its output: the text it writes (``str``) and, while it writes
#: a tool call, :class:`ToolCallDelta` pieces. Callers of the seam receive text only.
TokenCallback = Callable[[Any], None]


@runtime_checkable
class ChatModel(Protocol):
    """What the seam needs from a model."""

    name: str

    def complete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply: ...

    async def acomplete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply: ...


class StringModel:
    """A chat model named by a model string (``LiteLLMModel``, ``LocalModel``), with default call parameters
    that every request's own parameters override."""

    def __init__(self, model_string: str, **defaults: Any):
        self.name = model_string
        self.model_string = model_string
        self.defaults = defaults

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_string!r})"


#: The most characters of a provider's error message quoted in a ModelCallError.
ERROR_CHARS = 500


@contextmanager
def provider_errors(model: str) -> Iterator[None]:
    """Turn an ``Exception`` raised inside into :class:`ModelCallError` naming ``model`` (the original as
    ``__cause__``); llamabot's own errors and base exceptions (cancellation) pass through."""
    try:
        yield
    except LlamabotError:
        raise
    except Exception as exc:
        detail = str(exc)
        if len(detail) > ERROR_CHARS:
            detail = f"{detail[:ERROR_CHARS]}... ({len(detail)} chars)"
        raise ModelCallError(f"{model}: the model call failed: {type(exc).__name__}: {detail}") from exc

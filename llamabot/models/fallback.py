"""A fallback chain: one chat model made of several, answering with the first that does not fail with a provider
error. ``model=[primary, fallback, ...]`` on any bot makes one (``get_model`` resolves the list).

The next model is tried when the one before it failed with an error :func:`falls_back` accepts (or the chain's own
``fallback_on``): the provider's capacity, availability or reachability, or the credential it was given, as LiteLLM
reports them (it maps every provider's errors onto OpenAI's exception classes with an HTTP ``status_code``):

- 429 rate limit, 408 or any timeout, 5xx server errors, connection errors: the next model is tried;
- 401 and 403: tried too. Credentials belong to one provider (a revoked key, a lapsed account), and the next model
  is often another provider's; the failure stays visible in the trace, and a chain whose every model fails says
  why each did;
- everything else is the request's own fault, or a refusal that must not be routed around, and reaches the caller
  as it is: 400 (a malformed request, an exceeded context window, a content-policy refusal), 404, 422, and
  llamabot's own errors (a scripted model with nothing left to say, a missing model file) and bugs.

Streaming: the next model is tried only while no piece of the reply has reached the caller (or the run's hooks); an
error after the first piece is raised as it is, since what was shown cannot be taken back.

Retries of one model before the next is tried are LiteLLM's own (``model_settings={"num_retries": 2}``, and the
OpenAI client's ``max_retries``). The walk along the chain is here rather than in LiteLLM: ``completion(fallbacks=)``
falls back on every exception, a 400 included, keeps no reason per model and ends with a bare ``Exception``; its
Router keeps cooldown state across calls and reaches only LiteLLM models. A chain here may mix any chat models: a
LiteLLM model string, the embedded ``local/`` model, a scripted model.

The outcome is on the reply (:attr:`ModelReply.fallback <llamabot.models.reply.ModelReply.fallback>`: which model
answered, which failed and why), which the seam copies into the ``model_call`` span (``answered_by``,
``fallbacks``) where the trace and the run's hooks see it. A chain whose every model failed raises
:class:`ModelFallbackError` listing them.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable
from typing import Any

from llamabot.errors import ModelCallError
from llamabot.models.base import ChatModel, TokenCallback
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange, using_steps
from llamabot.models.reply import FailedAttempt, Fallback, ModelReply, ModelRequest

#: HTTP statuses after which the next model is tried (and every 5xx).
FALLBACK_STATUSES = frozenset({401, 403, 408, 429})
#: The most characters of a failed model's error kept in its :class:`FailedAttempt`.
ERROR_CHARS = 300


class ModelFallbackError(ModelCallError):
    """Every model of a fallback chain failed. ``fallback.failed`` lists them, in order, with their errors; the
    last model's error is the ``__cause__``."""

    def __init__(self, failed: tuple[FailedAttempt, ...]):
        self.fallback = Fallback(None, failed)
        tried = "; ".join(f"{attempt.model}: {attempt.error}" for attempt in failed)
        super().__init__(f"every model of the fallback chain failed: {tried}")


def falls_back(error: BaseException) -> bool:
    """Whether the next model of a chain should be tried after ``error`` (see the module): an HTTP status in
    :data:`FALLBACK_STATUSES` or 5xx, a timeout or a connection error, on ``error`` or its causes (llamabot's models
    raise :class:`ModelCallError` with the provider's exception as ``__cause__``)."""
    for cause in _causes(error):
        status = _status(cause)
        if status is not None:
            return status in FALLBACK_STATUSES or status >= 500
        if isinstance(cause, (TimeoutError, ConnectionError)) or _transport_error(cause):
            return True
    return False


def _causes(error: BaseException) -> Iterable[BaseException]:
    """``error``, then its ``__cause__``, its cause's cause... (a handful at most; never around a cycle)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen and len(seen) < 8:
        seen.add(id(error))
        yield error
        error = error.__cause__  # type: ignore[assignment]


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if type(status) is int else None


def _transport_error(error: BaseException) -> bool:
    """An OpenAI-client connection error or an httpx transport error (checked only when those libraries are loaded:
    an error of theirs cannot exist otherwise)."""
    for module, name in (("openai", "APIConnectionError"), ("httpx", "TransportError")):
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(error, cls):
            return True
    return False


def failed_attempt(model: str, error: BaseException) -> FailedAttempt:
    """The record of ``model`` failing with ``error``: the provider's exception (the innermost cause that carries a
    status, else ``error``'s own cause or ``error``) as ``"Type: message"``, cut to :data:`ERROR_CHARS`."""
    causes = list(_causes(error))
    shown = next((cause for cause in causes if _status(cause) is not None), causes[-1])
    detail = str(shown)
    if len(detail) > ERROR_CHARS:
        detail = f"{detail[:ERROR_CHARS]}... ({len(detail)} chars)"
    return FailedAttempt(model, f"{type(shown).__name__}: {detail}", _status(shown))


class _FirstPiece:
    """A model's ``on_token`` that remembers whether any piece has gone on to the caller."""

    __slots__ = ("on_token", "started")

    def __init__(self, on_token: TokenCallback):
        self.on_token = on_token
        self.started = False

    def __call__(self, piece: Any) -> None:
        self.started = True
        self.on_token(piece)


class _Attempt:
    """One model of a chain asked once: an effect of the chain's exchange, whose reply is the model's reply or the
    ``Exception`` it raised (the walk decides what the exception means)."""

    __slots__ = ("model", "request", "sink")

    def __init__(self, model: ChatModel, request: ModelRequest, sink: _FirstPiece | None):
        self.model, self.request, self.sink = model, request, sink

    def run(self) -> ModelReply | Exception:
        try:
            return self.model.complete(self.request, self.sink)
        except Exception as exc:  # noqa: BLE001 - handed to the walk, which decides or re-raises it
            return exc

    async def arun(self) -> ModelReply | Exception:
        try:
            return await self.model.acomplete(self.request, self.sink)
        except Exception as exc:  # noqa: BLE001 - handed to the walk, which decides or re-raises it
            return exc


class FallbackModel:
    """A chat model that asks ``models`` in order and answers with the first that does not fail with an error
    ``fallback_on`` accepts (default :func:`falls_back`; see the module). ``name`` is the first model's name (the
    one a bot is said to run on); a reply from another carries :class:`~llamabot.models.reply.Fallback`.

    ``models``: chat models (at least one; a :class:`FallbackModel` among them adds its models); model strings are
    resolved by ``get_model([...])`` (what ``model=[...]`` on a bot does), not here.
    The bot's ``model_settings`` reach every model of the chain; settings that differ per model go on the model
    objects, e.g. ``LiteLLMModel("anthropic/...", api_key=...)`` (a model's own settings yield to the bot's).
    """

    def __init__(self, models: Iterable[ChatModel], *,
                 fallback_on: Callable[[BaseException], bool] = falls_back):
        if not callable(fallback_on):
            raise TypeError(f"fallback_on must be a function of the error, got {type(fallback_on).__name__}")
        self.models = _members(models)
        self.fallback_on = fallback_on
        self.name = self.models[0].name

    @property
    def primary(self) -> ChatModel:
        """The first model of the chain."""
        return self.models[0]

    def __repr__(self) -> str:
        return f"FallbackModel([{', '.join(repr(model.name) for model in self.models)}])"

    def _walk(self, request: ModelRequest, on_token: TokenCallback | None) -> Exchange[ModelReply]:
        """The chain's logic as an exchange (one implementation for both drivers): yields each model's
        :class:`_Attempt`, receives its reply or exception, returns the reply or raises."""
        failed: list[FailedAttempt] = []
        error: Exception | None = None
        for model in self.models:
            sink = None if on_token is None else _FirstPiece(on_token)
            outcome = yield _Attempt(model, request, sink)
            if not isinstance(outcome, Exception):
                if not failed:
                    return outcome
                return dataclasses.replace(outcome, fallback=Fallback(model.name, tuple(failed)))
            error = outcome
            if (sink is not None and sink.started) or not self.fallback_on(error):
                if failed:
                    _tell_tried(error, tuple(failed))
                raise error
            failed.append(failed_attempt(model.name, error))
        raise ModelFallbackError(tuple(failed)) from error

    # The chain is one model call (in a durable run: one step), never a step per model: hence using_steps(None).

    def complete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
        with using_steps(None):
            return run_exchange(self._walk(request, on_token))

    async def acomplete(self, request: ModelRequest, on_token: TokenCallback | None = None) -> ModelReply:
        with using_steps(None):
            return await arun_exchange(self._walk(request, on_token))


def _tell_tried(error: Exception, failed: tuple[FailedAttempt, ...]) -> None:
    """Say on ``error`` (which ends the chain as it is) which models failed before it: a note in its traceback, and
    its ``fallback`` record for the trace when it has no attribute of that name already."""
    error.add_note("before it, the fallback chain tried: "
                   + "; ".join(f"{attempt.model} ({attempt.error})" for attempt in failed))
    if not hasattr(error, "fallback"):
        try:
            error.fallback = Fallback(None, failed)  # type: ignore[attr-defined]
        except AttributeError:  # an exception class with __slots__
            pass


def _members(models: Iterable[ChatModel]) -> tuple[ChatModel, ...]:
    """The chain's chat models, a FallbackModel among them flattened into its own; ``TypeError`` for what is not a
    chat model (a model string: resolve the list with ``get_model``), ``ValueError`` for none."""
    if isinstance(models, (str, bytes)) or not isinstance(models, Iterable):
        raise TypeError(f"a fallback chain is a list of chat models, got {type(models).__name__}")
    chain: list[ChatModel] = []
    for index, item in enumerate(models):
        if isinstance(item, FallbackModel):
            chain.extend(item.models)
        elif isinstance(item, ChatModel):
            chain.append(item)
        else:
            raise TypeError(f"FallbackModel item {index} is {type(item).__name__}, not a chat model; for model "
                            "strings use get_model([...]) or model=[...] on a bot")
    if not chain:
        raise ValueError("a fallback chain needs at least one model")
    return tuple(chain)


__all__ = ["FALLBACK_STATUSES", "FallbackModel", "ModelFallbackError", "failed_attempt", "falls_back"]

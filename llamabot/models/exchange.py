"""One implementation, two call styles.

A bot's logic is written once as an *exchange*: a generator that yields requests, receives their replies and
finally returns the bot's result. ``run_exchange`` drives it synchronously, ``arun_exchange`` asynchronously.
This is how the sync and async twins share every line of logic (message building, parsing, repair loops, tool
calls with their timeouts and retries) and differ only in how a request is carried out.

A request is either a :class:`ModelRequest` (the driver calls the model through the seam) or an :class:`Effect`:
any object that carries its own execution, ``run()`` for the sync driver and ``await arun()`` for the async one
(a tool attempt, a backoff sleep). The reply sent back into the exchange is the call's return value. Effects are
duck-typed so that this bottom layer knows nothing of the layers that define them (``llamabot.tools``).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Protocol, TypeVar

from llamabot.models.reply import ModelRequest
from llamabot.models.seam import ChatModel, TokenCallback, acall_model, call_model

T = TypeVar("T")


class Effect(Protocol):
    """A request that carries its own execution: ``run()`` in sync runs, ``await arun()`` in async runs."""

    def run(self) -> Any: ...

    async def arun(self) -> Any: ...


#: A generator that yields model requests or effects, receives their replies and returns ``T``.
Exchange = Generator[ModelRequest | Effect, Any, T]


def run_exchange(exchange: Exchange[T], model: ChatModel | None = None, on_token: TokenCallback | None = None) -> T:
    """Drive ``exchange`` to completion: model requests become sync model calls, effects run with ``run()``.

    ``model`` may be ``None`` for an exchange that makes no model call (a tool call).
    """
    try:
        request = next(exchange)
        while True:
            if type(request) is ModelRequest:
                reply: Any = call_model(_needed(model), request, on_token)
            else:
                reply = _effect(request, "run")()
            request = exchange.send(reply)
    except StopIteration as stop:
        return stop.value


async def arun_exchange(
    exchange: Exchange[T], model: ChatModel | None = None, on_token: TokenCallback | None = None
) -> T:
    """Drive ``exchange`` to completion with async model calls and ``await effect.arun()`` (the event loop is
    never blocked). ``model`` may be ``None`` for an exchange that makes no model call."""
    try:
        request = next(exchange)
        while True:
            if type(request) is ModelRequest:
                reply: Any = await acall_model(_needed(model), request, on_token)
            else:
                reply = await _effect(request, "arun")()
            request = exchange.send(reply)
    except StopIteration as stop:
        return stop.value


def _needed(model: ChatModel | None) -> ChatModel:
    if model is None:
        raise TypeError("the exchange asked for a model call, but the driver was given no model")
    return model


def _effect(request: Any, method: str) -> Any:
    """The effect's ``run`` or ``arun`` method; a clear error for anything that is not an effect."""
    try:
        return getattr(request, method)
    except AttributeError:
        raise TypeError(
            f"an exchange yielded {type(request).__name__}, which is neither a ModelRequest nor an effect "
            "(an object with run() and async arun())"
        ) from None


__all__ = ["Effect", "Exchange", "arun_exchange", "run_exchange"]

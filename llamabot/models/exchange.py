"""One implementation, two call styles.

A bot's logic is written once as an *exchange*: a generator that yields requests, receives their replies and
finally returns the bot's result. ``run_exchange`` drives it synchronously, ``arun_exchange`` asynchronously.
This is how the sync and async twins share every line of logic (message building, parsing, repair loops, tool
calls with their timeouts and retries) and differ only in how a request is carried out.

A request is either a :class:`ModelRequest` (the driver calls the model through the seam) or an :class:`Effect`:
any object that carries its own execution, ``run()`` for the sync driver and ``await arun()`` for the async one
(a tool attempt, a backoff sleep). The reply sent back into the exchange is the call's return value. Effects are
duck-typed so that this bottom layer knows nothing of the layers that define them (``llamabot.tools``).

Durable runs (``llamabot.durable``) make every request a checkpointed step: inside :func:`using_steps` the drivers
hand each request to a :class:`StepRunner` instead of carrying it out themselves (the runner records the reply,
or returns the one recorded by an earlier execution). Outside it the cost is one context-variable read per
exchange.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from llamabot.models.base import ChatModel, TokenCallback
from llamabot.models.reply import ModelRequest
from llamabot.models.seam import acall_model, call_model

T = TypeVar("T")


class Effect(Protocol):
    """A request that carries its own execution: ``run()`` in sync runs, ``await arun()`` in async runs."""

    def run(self) -> Any: ...

    async def arun(self) -> Any: ...


#: A generator that yields model requests or effects, receives their replies and returns ``T``.
Exchange = Generator[ModelRequest | Effect, Any, T]


class StepRunner(Protocol):
    """Carries out the requests of exchanges as steps (a durable run): ``step`` for the sync driver, ``astep``
    for the async one. Both receive what :func:`carry_out` / :func:`acarry_out` receive and must give the same
    reply those would."""

    def step(self, request: Any, model: ChatModel | None, on_token: TokenCallback | None) -> Any: ...

    async def astep(self, request: Any, model: ChatModel | None, on_token: TokenCallback | None) -> Any: ...


_STEPS: ContextVar[StepRunner | None] = ContextVar("llamabot_steps", default=None)


@contextmanager
def using_steps(runner: StepRunner | None) -> Iterator[None]:
    """Within the block (this task or thread and what it starts), the drivers hand every request to ``runner``;
    ``None`` turns that off again (inside a step, nested exchanges run plainly)."""
    token = _STEPS.set(runner)
    try:
        yield
    finally:
        _STEPS.reset(token)


#: ``step_runner()``: the runner requests are handed to here (inside :func:`using_steps`), or ``None``: then the
#: drivers carry requests out themselves. Steps of a durable run are recorded in order, so callers that would start
#: requests concurrently start them one at a time when this is set. (The context variable's own ``get``: asked on
#: every decision and tool call, it costs no Python call.)
step_runner: Callable[[], StepRunner | None] = _STEPS.get


def carry_out(request: Any, model: ChatModel | None, on_token: TokenCallback | None) -> Any:
    """Carry out one request synchronously: a model call through the seam, or the effect's ``run()``."""
    if type(request) is ModelRequest:
        return call_model(_needed(model), request, on_token)
    return _effect(request, "run")()


async def acarry_out(request: Any, model: ChatModel | None, on_token: TokenCallback | None) -> Any:
    """Async twin of :func:`carry_out` (``await acall_model``, ``await effect.arun()``)."""
    if type(request) is ModelRequest:
        return await acall_model(_needed(model), request, on_token)
    return await _effect(request, "arun")()


def run_exchange(exchange: Exchange[T], model: ChatModel | None = None, on_token: TokenCallback | None = None) -> T:
    """Drive ``exchange`` to completion: model requests become sync model calls, effects run with ``run()``.

    ``model`` may be ``None`` for an exchange that makes no model call (a tool call).
    """
    steps = _STEPS.get()
    perform = carry_out if steps is None else steps.step
    try:
        request = next(exchange)
        while True:
            request = exchange.send(perform(request, model, on_token))
    except StopIteration as stop:
        return stop.value


async def arun_exchange(
    exchange: Exchange[T], model: ChatModel | None = None, on_token: TokenCallback | None = None
) -> T:
    """Drive ``exchange`` to completion with async model calls and ``await effect.arun()`` (the event loop is
    never blocked). ``model`` may be ``None`` for an exchange that makes no model call."""
    steps = _STEPS.get()
    try:
        request = next(exchange)
        if steps is not None:
            while True:
                request = exchange.send(await steps.astep(request, model, on_token))
        while True:
            request = exchange.send(await acarry_out(request, model, on_token))
    except StopIteration as stop:
        return stop.value


def answered(exchange: Exchange[T], reply: Any) -> Exchange[T]:
    """``exchange`` with its first request answered by ``reply``, a reply made earlier (AoT's drafted plans: the
    first requests of several exchanges sent at once); any later request goes to the driver as usual."""
    try:
        next(exchange)
        request = exchange.send(reply)
        while True:
            request = exchange.send((yield request))
    except StopIteration as stop:
        return stop.value


def reply_to(request: Any) -> Exchange[Any]:
    """An exchange of one request whose result is its reply."""
    return (yield request)


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


__all__ = [
    "Effect", "Exchange", "StepRunner", "acarry_out", "answered", "arun_exchange", "carry_out", "reply_to",
    "run_exchange", "step_runner", "using_steps",
]

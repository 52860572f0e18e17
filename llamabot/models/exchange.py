"""One implementation, two call styles.

A bot's logic is written once as an *exchange*: a generator that yields a :class:`ModelRequest`, receives the
:class:`ModelReply` and finally returns the bot's result. ``run_exchange`` drives it with sync model calls,
``arun_exchange`` with async ones. This is how the sync and async twins share every line of logic
(message building, parsing, repair loops) and differ only in the model call.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

from llamabot.models.reply import ModelReply, ModelRequest
from llamabot.models.seam import ChatModel, TokenCallback, acall_model, call_model

T = TypeVar("T")
Exchange = Generator[ModelRequest, ModelReply, T]


def run_exchange(exchange: Exchange[T], model: ChatModel, on_token: TokenCallback | None = None) -> T:
    """Drive ``exchange`` to completion with synchronous model calls."""
    try:
        request = next(exchange)
        while True:
            request = exchange.send(call_model(model, request, on_token))
    except StopIteration as stop:
        return stop.value


async def arun_exchange(exchange: Exchange[T], model: ChatModel, on_token: TokenCallback | None = None) -> T:
    """Drive ``exchange`` to completion with async model calls (the event loop is never blocked)."""
    try:
        request = next(exchange)
        while True:
            request = exchange.send(await acall_model(model, request, on_token))
    except StopIteration as stop:
        return stop.value


def merged_params(defaults: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    return {**defaults, **overrides} if overrides else defaults

"""Bot factories: how any process (a restarted service, a worker) builds the same bot for a run.

A durable run records its factory as a ``module:attr`` spec (resolved with ``pkgutil.resolve_name``, like
``llamabot agent --tool``). The attribute is a function that returns a graph bot (``AgentBot``, ``AoTBot``...), or
a graph bot itself. Each process builds a spec's bot once and reuses it for all its runs: graph bots keep no
per-run data on the instance (every async run gets a fresh state).
"""

from __future__ import annotations

import pkgutil
import threading
from collections.abc import Callable
from typing import Any

from llamabot.agents.graphbot import GraphBot
from llamabot.durable.errors import BotFactoryError


def factory_spec(factory: str | Callable[[], GraphBot]) -> str:
    """The ``module:attr`` spec of ``factory`` (a spec, or a module-level function another process can import).

    Raises :class:`BotFactoryError` for a lambda, a nested function, or anything the spec would not find again.
    """
    if isinstance(factory, str):
        module, sep, attribute = factory.partition(":")
        if not module or not sep or not attribute:
            raise BotFactoryError(f"{factory!r}: give the bot factory as module:attr, e.g. myapp.bots:make_agent")
        return factory
    module, qualname = getattr(factory, "__module__", None), getattr(factory, "__qualname__", None)
    if not callable(factory) or not module or not qualname or "<" in qualname:
        raise BotFactoryError(
            f"{factory!r} cannot be rebuilt in another process: pass a module-level function (or its "
            "'module:attr' spec) that returns the bot"
        )
    spec = f"{module}:{qualname}"
    if _resolve(spec) is not factory:
        raise BotFactoryError(f"{spec!r} does not name {factory!r}; pass the bot factory's 'module:attr' spec")
    return spec


def _resolve(spec: str) -> Any:
    try:
        return pkgutil.resolve_name(spec)
    except (ImportError, AttributeError, ValueError) as exc:
        raise BotFactoryError(f"cannot load the bot factory {spec!r}: {exc}") from exc


class BotCache:
    """The bots of one process, one per factory spec, built on first use (thread-safe)."""

    def __init__(self) -> None:
        self._bots: dict[str, GraphBot] = {}
        self._lock = threading.Lock()

    def bot_for(self, spec: str) -> GraphBot:
        bot = self._bots.get(spec)
        if bot is None:
            with self._lock:
                bot = self._bots.get(spec)
                if bot is None:
                    bot = self._bots[spec] = build_bot(spec)
        return bot

    def state_classes(self) -> tuple[type, ...]:
        """The ``state_classes`` of every bot built so far (what the durable serializer may store besides
        llamabot's own classes)."""
        return tuple(cls for bot in list(self._bots.values()) for cls in bot.state_classes)

    def clear(self) -> None:
        with self._lock:
            self._bots.clear()


def build_bot(spec: str) -> GraphBot:
    """The bot ``spec`` names (a graph bot, or what calling it returns); :class:`BotFactoryError` otherwise."""
    value = _resolve(spec)
    bot = value
    if not isinstance(value, GraphBot) and callable(value):
        try:
            bot = value()
        except TypeError as exc:  # e.g. a function that needs arguments: not a factory
            raise BotFactoryError(f"the bot factory {spec!r} cannot be called without arguments: {exc}") from exc
    if not isinstance(bot, GraphBot):
        raise BotFactoryError(
            f"the bot factory {spec!r} gave {type(bot).__name__}, not a graph bot (AgentBot, AoTBot, ToTBot, ANoTBot)"
        )
    return bot

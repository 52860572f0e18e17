"""StructuredNode: a graph step whose work is one structured answer, StructuredBot's exchange.

The node's ``exec`` drives :class:`~llamabot.bot.structuredbot.StructuredBot`'s exchange (the request with the
schema as ``response_format``, pydantic validation, re-prompting with the errors at most ``max_repairs`` times,
then :class:`~llamabot.errors.StructuredOutputError`): with ``run_exchange`` in a sync flow and
``arun_exchange`` in an async one, so both run the same logic, and a durable run records each model request as a
step. Subclasses write ``prep`` (what the bot is given, see :meth:`StructuredNode.messages`) and ``post``, which
receives a :class:`Parsed`: the validated object and the reply's text. AoT's planner and ANoT's phase 1 are such
nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from llamabot.bot.structuredbot import StructuredBot
from llamabot.errors import StructuredOutputError
from llamabot.graph.flow import DualNode
from llamabot.models.exchange import Exchange, arun_exchange, run_exchange

M = TypeVar("M", bound=BaseModel)


@dataclass(slots=True)
class Parsed(Generic[M]):
    """What a :class:`StructuredNode`'s ``exec`` hands to ``post``.

    ``value``: the validated instance (``None`` when the answer failed); ``raw``: the text of the last reply (the
    one that validated, or the last invalid one); ``error``: the :class:`StructuredOutputError` of a failed
    answer, handed over only by a node with ``keep_failures`` (otherwise it is raised from ``exec``).
    """

    value: M | None
    raw: str | None
    error: StructuredOutputError | None = None


class StructuredNode(DualNode, Generic[M]):
    """A step that asks ``bot`` (a :class:`StructuredBot`) for a validated ``bot.output_type`` instance.

    ``bot`` carries the model, its settings, the system prompt, the ``response_format`` and ``max_repairs``; the
    node calls it through its exchange inside the node's span (no run of its own), so the run's hooks, usage
    limits and usage accounting see the calls. ``keep_failures`` (a class attribute, default ``False``): when
    ``True``, a :class:`StructuredOutputError` is handed to ``post`` as :attr:`Parsed.error` instead of ending
    the step, for nodes that route a failed answer (a re-plan, a fallback).
    """

    keep_failures: bool = False

    def __init__(self, bot: StructuredBot[M]):
        super().__init__()
        self.bot = bot

    def messages(self, prep_res: Any) -> Any:
        """What the bot is given for this step (as ``bot(...)`` takes it: a str is a user message, a message dict,
        or a list of them): by default what ``prep`` returned."""
        return prep_res

    def _exchange(self, prep_res: Any) -> Exchange[Parsed[M]]:
        """The bot's exchange, passed through, with the text of the last reply kept for ``post``."""
        inner = iter(self.bot.exchange(self.messages(prep_res)))
        raw: str | None = None
        try:
            request = next(inner)
            while True:
                reply = yield request
                raw = reply.content
                request = inner.send(reply)
        except StopIteration as stop:
            return Parsed(stop.value, raw)
        except StructuredOutputError as exc:
            if not self.keep_failures:
                raise
            return Parsed(None, exc.raw_output, exc)

    def exec(self, prep_res: Any) -> Parsed[M]:
        return run_exchange(self._exchange(prep_res), self.bot.model, self.bot.stream_target)

    async def exec_async(self, prep_res: Any) -> Parsed[M]:
        return await arun_exchange(self._exchange(prep_res), self.bot.model, self.bot.stream_target)

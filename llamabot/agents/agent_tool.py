"""Agents as tools: ``bot.as_tool(name=..., description=...)`` makes any graph bot a tool of another.

    researcher = AgentBot(tools=[search], system_prompt="...")
    writer = AgentBot(tools=[researcher.as_tool(name="research", description="Find facts about a topic.")])

The tool takes one argument, ``query`` (the task, in plain words), and runs the inner bot on it:

- the inner run is a child of the calling tool's span, in the outer run's trace, so one trace shows both;
- its model calls add to the outer run's usage, and the outer run's usage limits hold inside it (unless the inner
  bot has limits of its own);
- it gets the outer run's ``deps`` and ``approver``; when the outer run has no approver, a call the inner run
  must not make without a decision pauses the *outer* run: its :class:`~llamabot.agents.approval.ApprovalRequired`
  lists the inner calls, and ``outer.resume(paused, decisions)`` continues the inner run from where it paused
  (its checkpoint is kept in the outer run's state), then the outer one;
- each call is a fresh inner run (no conversation is kept between calls); sync outer runs call the inner bot
  synchronously, async ones await ``arun``. ``output`` maps the inner result to the tool's value
  (e.g. ``output=lambda r: r.answer`` for an ``AoTBot``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llamabot.agents.approval import APPROVER, DECISIONS, PausedRun
from llamabot.observe.tracing import current_run
from llamabot.tools.approval import Decision
from llamabot.tools.context import RunContext
from llamabot.tools.tool import Tool, build_tool

if TYPE_CHECKING:
    from llamabot.agents.graphbot import GraphBot

#: The hidden parameter through which a tool node hands an agent tool the inner run it paused:
#: ``(the inner PausedRun's JSON, the outer run's decisions)`` (see :func:`nested_resume`).
NESTED_PARAM = "_nested"


def agent_tool(bot: GraphBot, *, name: str, description: str, output: Callable[[Any], Any] | None = None,
               **options: Any) -> Tool:
    """The :class:`Tool` that runs ``bot`` (see the module docstring). ``options``: how the tool is called
    (``timeout``, ``retries``, ``requires_approval``...), as ``@tool``'s."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"as_tool(name=...) must be a tool name (letters, digits, _), got {name!r}")
    if not isinstance(description, str) or not description.strip():
        raise ValueError("as_tool(description=...) must say what the agent does: the calling model reads it")
    if output is not None and not callable(output):
        raise TypeError(f"as_tool(output=...) must be a callable (result -> value), got {type(output).__name__}")
    needs = sorted(bot.required_run_options)
    if needs:
        raise TypeError(f"{type(bot).__name__} runs need {', '.join(needs)} besides the query; wrap it in a "
                        "@tool function of your own instead of as_tool")
    shape = output or (lambda result: result)

    def run_agent(ctx: RunContext[Any], query: str, _nested: Any = None) -> Any:
        resumed = nested_resume(_nested)
        if resumed is not None:
            return shape(bot.resume(*resumed, **inherited(ctx)))
        return shape(bot.run_sync(query, **inherited(ctx))[0])

    async def arun_agent(ctx: RunContext[Any], query: str, _nested: Any = None) -> Any:
        resumed = nested_resume(_nested)
        if resumed is not None:
            return shape(await bot.aresume(*resumed, **inherited(ctx)))
        return shape((await bot.arun_with_trace(query, **inherited(ctx)))[0])

    run_agent.__doc__ = f"{description.strip()}\n\nArgs:\n    query: The task for {name}, in plain words.\n"
    return dataclasses.replace(build_tool(run_agent, name=name, **options), afunc=arun_agent, runs_steps=True)


def inherited(ctx: RunContext[Any]) -> dict[str, Any]:
    """The run options an inner run takes from the outer one: its deps and its approver."""
    options: dict[str, Any] = {}
    if ctx.deps is not None:
        options["deps"] = ctx.deps
    outer = current_run()
    approver = outer.values.get(APPROVER) if outer is not None else None
    if approver is not None:
        options["approver"] = approver
    return options


def nested_resume(nested: Any) -> tuple[PausedRun, dict[str, Decision]] | None:
    """The inner paused run and its decisions, when the outer run was resumed after the inner one paused."""
    if nested is None:
        return None
    paused_json, decisions = nested
    paused = PausedRun.from_json(paused_json)
    given = decisions or {}
    return paused, {r.call_id: Decision.from_dict(given[r.call_id]) for r in paused.requests if r.call_id in given}


def nested_context(shared: dict[str, Any], call_id: str) -> Any:
    """What a tool node passes an agent tool as ``_nested`` for call ``call_id`` (``None``: a fresh inner run)."""
    paused = (shared.get(NESTED) or {}).get(call_id)
    return None if paused is None else (paused, shared.get(DECISIONS) or {})


#: The run-state key holding the inner runs paused for approval: outer call id -> the inner PausedRun's JSON.
NESTED = "_nested_paused"


def keep_nested(shared: dict[str, Any], call_id: str, paused: PausedRun) -> None:
    """Keep the inner run that paused during call ``call_id`` in the outer run's state (plain JSON)."""
    shared.setdefault(NESTED, {})[call_id] = paused.to_json()


__all__ = ["NESTED", "agent_tool", "keep_nested", "nested_context"]

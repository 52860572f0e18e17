"""``RunContext``: what a tool may know about the run that calls it, typed, instead of magic parameter names.

A tool whose first parameter is annotated ``RunContext`` (or ``RunContext[Deps]``) receives the run's context
there; the parameter never appears in the tool's schema, whatever its name::

    @dataclass
    class Deps:
        db: Database
        user_id: int

    @tool
    def balance(ctx: RunContext[Deps], account: str) -> float:
        return ctx.deps.db.balance(ctx.deps.user_id, account)

    bot = AgentBot(tools=[balance])
    bot("How much is on savings?", deps=Deps(db, 42))     # or: await bot.arun(q, deps=...)

The deps are a live value of the run (never saved in its state or a checkpoint: give them again to
``bot.resume(..., deps=...)``), so concurrent runs of one bot each see their own. The older hidden names keep
working beside it: ``_deps`` (the same deps), ``_globals_dict``, ``_memory`` and ``_trace_id``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, get_origin

from llamabot.observe.tracing import active_run
from llamabot.observe.usage import RunUsage

if TYPE_CHECKING:
    from llamabot.tools.approval import Decision

DepsT = TypeVar("DepsT")

#: The run's live-values key of the deps given with ``bot(q, deps=...)``.
DEPS = "deps"
#: The tool-call context keys a tool node passes for the call it runs (see :meth:`Tool.inject`).
CALL_ID = "tool_call_id"
APPROVAL = "approval"


@dataclass(frozen=True, slots=True)
class RunContext(Generic[DepsT]):
    """The run calling a tool. ``deps``: what the caller gave the run (``bot(q, deps=...)``; ``None`` when it gave
    none); ``run_id``: the run's trace id; ``usage``: what the run has spent so far (live: requests, tokens,
    cost); ``tool_name`` and ``tool_call_id``: this call (the model's call id in an agent, ``atom-<id>`` for an
    AoT atom, ``compensate-<id>`` for its compensation; ``None`` for a direct call); ``approval``: the decision this call runs under, for a tool that requires approval (``None``
    otherwise)."""

    deps: DepsT
    run_id: str = ""
    usage: RunUsage = field(default_factory=RunUsage)
    tool_name: str = ""
    tool_call_id: str | None = None
    approval: Decision | None = None


def is_run_context(annotation: Any) -> bool:
    """Whether a parameter annotation asks for the run's context (``RunContext`` or ``RunContext[...]``)."""
    return annotation is RunContext or get_origin(annotation) is RunContext


def context_parameter(func: Any, hints: Mapping[str, Any], name: str) -> str | None:
    """The name of ``func``'s parameter that receives the :class:`RunContext` (its first one), or ``None``.
    A ``RunContext`` parameter anywhere but first is a mistake the tool's author should hear about
    (:class:`ValueError`, turned into ``ToolDefinitionError`` by the caller)."""
    found = [p for p in inspect.signature(func).parameters if is_run_context(hints.get(p))]
    if not found:
        return None
    first = next(iter(inspect.signature(func).parameters))
    if found != [first]:
        raise ValueError(f"tool {name!r}: the RunContext parameter must be the first one, and only one "
                         f"(found {', '.join(found)})")
    return first


def run_context(tool_name: str, context: Mapping[str, Any] | None) -> RunContext[Any]:
    """The :class:`RunContext` of a call of ``tool_name`` now: the active run's deps, id and usage, with the call
    id and decision the tool node passed in ``context``. Outside any run: no deps, an empty usage."""
    context = context or {}
    active = active_run()
    if active is None:
        return RunContext(None, "", RunUsage(), tool_name, context.get(CALL_ID), context.get(APPROVAL))
    run = active[0]
    return RunContext(run.values.get(DEPS), run.trace.trace_id, run.trace.usage, tool_name,
                      context.get(CALL_ID), context.get(APPROVAL))


__all__ = ["DEPS", "RunContext", "context_parameter", "is_run_context", "run_context"]

"""The graph-bot base: what every bot built as a graph is (``AgentBot``, ``AoTBot``, ``ToTBot``, ``ANoTBot``).

    bot(query)                          run synchronously (a notebook, a script)
    await bot.arun(query)               run on the event loop (a service); any number of concurrent runs
    async for event in bot.astream(q)   run and yield RunEvents (decisions, tool calls, node steps, the model's
                                        tokens and the final answer as it is written...)
    bot.last_trace                      the trace of the last run started (``.usage``: what it spent)
    bot.usage_limits = UsageLimits(...) stop runs before a request that would exceed them (or per run:
                                        ``bot(q, usage_limits=...)``)
    bot.to_mermaid()                    the graph as a mermaid diagram

A subclass builds its graph once (:meth:`set_graph`) and says how a run starts and ends: :meth:`new_state` (the
fresh, serialisable shared data of one run), :meth:`run_values` (live values kept beside it) and
:meth:`result`. The sync and async paths share every line but the flow's walk.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from llamabot.agents.agent_tool import agent_tool
from llamabot.agents.approval import (
    APPROVER,
    DECISIONS,
    STATE_CLASSES,
    ApprovalRequired,
    PausedRun,
    decisions_for,
)
from llamabot.bot.options import check_shared, unknown_option
from llamabot.graph.checkpoint import Checkpoint, CheckpointHook
from llamabot.graph.codec import StateCodecError, loads_state
from llamabot.graph.flow import AsyncFlow, Flow, GraphRoutingError, next_node, node_label
from llamabot.graph.mermaid import MermaidDiagram, to_mermaid, walk
from llamabot.observe.events import EventHook, RunEvent
from llamabot.observe.hooks import RunHooks, hook_tuple
from llamabot.observe.tracing import Trace, run
from llamabot.observe.usage import UsageLimits
from llamabot.tools.approval import Approver, Decision
from llamabot.tools.closing import Closing
from llamabot.tools.context import DEPS
from llamabot.tools.tool import Tool

#: The run options every graph bot takes: ``usage_limits`` (this run's, instead of the bot's), ``approver`` (decides
#: on tool calls that require approval), ``deps`` (what the run's tools get as ``RunContext.deps``).
RUN_OPTIONS = frozenset({"usage_limits", "approver", "deps"})

#: What a run continues from: a checkpoint (or its JSON), or a run paused for approval.
Resumable = Checkpoint | str | PausedRun | ApprovalRequired


class _RunScope(run):
    """One run of a graph bot, around the walk of its flow: the ``run`` scope (the ``run`` span) that also makes
    the run's state (or takes a restored one), and at the end records the result on the span and in ``outcome``
    as ``[result, trace]``, or lets the bot tidy a failed run's state (``failed``) before the error goes on. A
    class rather than a generator-based context manager, and the run scope itself rather than a wrapper around
    one: it is on the path of every run."""

    __slots__ = ("bot", "state", "outcome", "query", "options", "restored")

    def __init__(self, bot: GraphBot, query: Any, options: dict[str, Any], hooks: Iterable[RunHooks],
                 trace: Trace | None, outcome: list[Any], restored: dict[str, Any] | None):
        bot.check_run_options(options)
        if restored is not None and "memory" in options:  # it would be silently ignored
            raise TypeError(f"{type(bot).__name__}.resume() got memory=...: a resumed run continues the conversation "
                            "saved in its checkpoint")
        limits = options.pop("usage_limits", None) or bot.usage_limits
        deps = options.pop("deps", None)
        values = bot.run_values(options)
        approver = options.pop("approver", None) or bot.approver
        if approver is not None:
            values[APPROVER] = approver
        if deps is not None:
            values[DEPS] = deps
        if bot.state_classes:
            values[STATE_CLASSES] = bot.state_classes
        if hooks:
            hooks = hook_tuple(hooks, f"{type(bot).__name__} run")
        run.__init__(self, type(bot).__name__, hooks=(*bot.hooks, *hooks) if hooks else bot.hooks,
                     values=values, trace=trace, limits=limits)
        self.attributes = bot.run_attributes(query) if restored is None else {"resumed": True}
        self.bot, self.outcome, self.query, self.options, self.restored = bot, outcome, query, options, restored

    def __enter__(self) -> dict[str, Any]:  # type: ignore[override]
        trace = run.__enter__(self)
        try:
            self.bot.last_trace = trace
            restored = self.restored
            self.state = self.bot.new_state(self.query, trace, self.options) if restored is None else restored
        except BaseException as exc:
            run.__exit__(self, type(exc), exc, exc.__traceback__)
            raise
        return self.state

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            if exc is not None:
                self.bot.failed(self.state, exc)
            else:
                trace = self.context.trace
                value = self.bot.result(self.state, trace)
                self.span.attributes["result"] = value
                self.outcome += (value, trace)
        except BaseException as raised:  # the run ends with what failed here (tidying, or making the result)
            run.__exit__(self, type(raised), raised, raised.__traceback__)
            raise
        run.__exit__(self, exc_type, exc, tb)


class GraphBot(Closing):
    """Base class of bots that run a PocketFlow graph. ``hooks``: lifecycle hooks told about every run;
    ``usage_limits``: :class:`UsageLimits` every run obeys (a run's own ``usage_limits=`` option replaces them)."""

    flow: Flow
    async_flow: AsyncFlow
    #: Terminal tools whose argument holds the run's answer: ``astream`` decodes it as the model writes it and
    #: yields it as ``token`` events with ``answer`` true (AgentBot: ``{"respond_to_user": "response"}``).
    answer_arguments: Mapping[str, str] = MappingProxyType({})
    #: The keyword options one run takes (``bot(q, **options)``, ``arun``, ``astream``, ``resume``): an unknown one is
    #: a ``TypeError`` naming it, never ignored. A subclass adds its own (``AgentBot``: ``memory``, ``globals_dict``).
    run_options: frozenset[str] = RUN_OPTIONS
    #: Run options a run cannot go without (``ANoTBot``: ``items``): such a bot is not a one-query tool (``as_tool``).
    required_run_options: frozenset[str] = frozenset()

    def __init__(self, *, hooks: Iterable[RunHooks] = (), usage_limits: UsageLimits | None = None,
                 approver: Approver | None = None):
        self.hooks: tuple[RunHooks, ...] = hook_tuple(hooks, type(self).__name__)
        check_shared(type(self).__name__, usage_limits=usage_limits)
        if approver is not None and not callable(approver):
            raise TypeError(f"approver must be a callable (request -> Decision or bool), got {type(approver).__name__}")
        self.usage_limits = usage_limits
        #: Decides in-process on tool calls that require approval (see :mod:`llamabot.tools.approval`); without
        #: one, a run pauses before them (:class:`~llamabot.agents.approval.ApprovalRequired`).
        self.approver = approver
        self.last_trace: Trace | None = None

    def check_run_options(self, options: Mapping[str, Any], where: str = "") -> None:
        """``TypeError`` naming the first of ``options`` this bot's runs do not take, with the closest one
        (``where``: what to add, e.g. which durable run)."""
        if options and not self.run_options.issuperset(options):
            unknown = sorted(options.keys() - self.run_options)[0]
            raise TypeError(unknown_option(f"{type(self).__name__}.run", unknown, self.run_options) + where)

    def as_tool(self, *, name: str, description: str, output: Callable[[Any], Any] | None = None,
                **options: Any) -> Tool:
        """This bot as a tool of another bot: one ``query`` argument, a fresh run per call, in the calling run's
        trace, usage, limits, deps and approvals (an inner pause pauses the outer run). ``output`` maps the
        result to the tool's value; ``options`` are ``@tool``'s (``timeout``, ``retries``...). See
        :mod:`llamabot.agents.agent_tool`."""
        return agent_tool(self, name=name, description=description, output=output, **options)

    # -- what a subclass provides ---------------------------------------------------------------------

    def set_graph(self, start: Any) -> None:
        """Use the graph that begins at ``start`` (a node or a flow) for every run."""
        self.flow = Flow(start=start)
        self.async_flow = AsyncFlow(start=start)

    def flows(self, options: dict[str, Any]) -> tuple[Flow, AsyncFlow]:
        """The sync and async flows a run walks (the graph from :meth:`set_graph` by default)."""
        return self.flow, self.async_flow

    def new_state(self, query: Any, trace: Trace, options: dict[str, Any]) -> dict[str, Any]:
        """The shared data of a new run (data only: it can be saved and restored)."""
        raise NotImplementedError

    def run_values(self, options: dict[str, Any]) -> dict[str, Any]:
        """Live values of a run, reachable by its nodes through ``current_run().values`` (none by default)."""
        return {}

    def run_attributes(self, query: Any) -> dict[str, Any]:
        """Attributes of the run's span."""
        return {"query": query}

    def result(self, state: dict[str, Any], trace: Trace) -> Any:
        """What a finished run returns."""
        raise NotImplementedError

    def failed(self, state: dict[str, Any], error: BaseException) -> None:
        """Called when a run fails, before the error propagates (tidy the state; nothing by default)."""

    # -- running ----------------------------------------------------------------------------------------

    def run_sync(self, query: Any, *, hooks: Iterable[RunHooks] = (), trace: Trace | None = None,
                 **options: Any) -> tuple[Any, Trace]:
        """Run synchronously; returns ``(result, trace)`` (this run's own trace)."""
        outcome: list[Any] = []
        with _RunScope(self, query, options, hooks, trace, outcome, None) as state:
            self.flows(options)[0].run(state)
        return outcome[0], outcome[1]

    async def arun_with_trace(self, query: Any, *, hooks: Iterable[RunHooks] = (), trace: Trace | None = None,
                              **options: Any) -> tuple[Any, Trace]:
        """Like :meth:`arun`, also returning this run's own trace (``last_trace`` is shared by concurrent runs)."""
        outcome: list[Any] = []
        with _RunScope(self, query, options, hooks, trace, outcome, None) as state:
            await self.flows(options)[1].run_async(state)
        return outcome[0], outcome[1]

    def __call__(self, query: Any, **options: Any) -> Any:
        """Run ``query`` synchronously and return the result."""
        return self.run_sync(query, **options)[0]

    async def arun(self, query: Any, **options: Any) -> Any:
        """Run ``query`` on the event loop and return the result (nodes await the model; sync tools run in
        threads)."""
        return (await self.arun_with_trace(query, **options))[0]

    async def astream(self, query: Any, **options: Any) -> AsyncIterator[RunEvent]:
        """Run ``query`` and yield :class:`RunEvent`s as they happen; the last is ``final_answer`` (or ``error``,
        after which the exception is raised). Closing the iterator early cancels the run."""
        events: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        trace = Trace()  # this run's own trace: its id is known even if the first step fails
        hooks = (*options.pop("hooks", ()), EventHook(events.put_nowait, self.answer_arguments))
        task = asyncio.create_task(self.arun_with_trace(query, hooks=hooks, trace=trace, **options))
        task.add_done_callback(lambda _: events.put_nowait(None))
        try:
            while (event := await events.get()) is not None:
                yield event
            exc = task.exception()
            if isinstance(exc, ApprovalRequired):
                yield RunEvent("approval_required", trace.trace_id, {
                    "requests": [r.to_dict() for r in exc.requests], "paused": exc.paused.to_json(),
                    "usage": trace.usage.to_dict()})
                raise exc
            if exc is not None:
                yield RunEvent("error", trace.trace_id, {"error": f"{type(exc).__name__}: {exc}",
                                                         "usage": trace.usage.to_dict()})
                raise exc
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    # -- checkpoints: continue a run from a node boundary ------------------------------------------------

    #: Classes the state codec may revive besides ``llamabot``'s own (e.g. models built at run time).
    state_classes: tuple[type, ...] = ()

    def checkpoints(self, save: Any) -> CheckpointHook:
        """A hook that passes a :class:`Checkpoint` to ``save`` at every node boundary of a run of this bot:
        ``bot.run_sync(q, hooks=[bot.checkpoints(saved.append)])``."""
        return CheckpointHook(save, self.state_classes)

    def node_named(self, name: str) -> Any:
        """The node of this bot's graph whose steps are recorded under ``name`` (a checkpoint's ``node``)."""
        found = [n for n in walk(self.flow.start_node) if (getattr(n, "span_name", None) or node_label(n)) == name]
        if len(found) != 1:
            raise GraphRoutingError(f"{type(self).__name__} has {len(found)} nodes named {name!r}; cannot resume there")
        return found[0]

    def _restore(self, checkpoint: Resumable, decisions: Mapping[str, Decision | bool] | None = None,
                 ) -> tuple[dict[str, Any], Any]:
        if isinstance(checkpoint, ApprovalRequired):
            checkpoint = checkpoint.paused
        decided = None
        if isinstance(checkpoint, PausedRun):
            decided = decisions_for(checkpoint, decisions)
            checkpoint = checkpoint.checkpoint
        elif decisions:
            raise ValueError("decisions are given for a paused run: pass the PausedRun (or the ApprovalRequired "
                             "error) the run paused with, not a plain checkpoint")
        if not isinstance(checkpoint, Checkpoint):  # its JSON, or anything else: refused with StateCodecError
            checkpoint = Checkpoint.from_json(checkpoint)
        state = loads_state(checkpoint.state, allowed=self.state_classes)
        action = self.restored_action(state, checkpoint.action)
        if decided is not None:
            if not isinstance(state, dict):
                raise ValueError("the paused run's checkpoint holds no run state")
            state[DECISIONS] = {**(state.get(DECISIONS) or {}), **decided}
        return state, next_node(self.node_named(checkpoint.node), action)

    def restored_action(self, state: Any, action: str | None) -> str | None:
        """Check the state a checkpoint gave back (``StateCodecError`` when it cannot be the run's state) and
        return the action the run follows from the checkpoint's node (``action``, unless the subclass must
        reroute: see ``AgentBot``)."""
        if type(state) is not dict:
            raise StateCodecError("state", f"a run's state is a dict, not a {type(state).__name__}")
        return action

    def resume(self, checkpoint: Resumable, decisions: Mapping[str, Decision | bool] | None = None, *,
               hooks: Iterable[RunHooks] = (), **options: Any) -> Any:
        """Continue a run from ``checkpoint`` (a :class:`Checkpoint` or its JSON) and return its result;
        ``options`` give the live values again (e.g. ``globals_dict``). A run paused for approval continues from
        its :class:`PausedRun` (or the :class:`ApprovalRequired` error) with ``decisions``: call id ->
        ``Decision.approve()``, ``Decision.approve(arguments=...)``, ``Decision.reject(reason)`` (or
        ``True``/``False``), one for every waiting call."""
        state, following = self._restore(checkpoint, decisions)
        outcome: list[Any] = []
        with _RunScope(self, None, options, hooks, None, outcome, state):
            if following is not None:
                self.flows(options)[0].run_from(following, state)
        return outcome[0]

    async def aresume(self, checkpoint: Resumable, decisions: Mapping[str, Decision | bool] | None = None, *,
                      hooks: Iterable[RunHooks] = (), **options: Any) -> Any:
        """Async twin of :meth:`resume`."""
        state, following = self._restore(checkpoint, decisions)
        outcome: list[Any] = []
        with _RunScope(self, None, options, hooks, None, outcome, state):
            if following is not None:
                await self.flows(options)[1].run_from_async(following, state)
        return outcome[0]

    # -- looking at it ----------------------------------------------------------------------------------

    def to_mermaid(self) -> MermaidDiagram:
        """The graph as a mermaid diagram (displayed as a diagram in notebooks)."""
        return MermaidDiagram(to_mermaid(self.flow))

    def _repr_markdown_(self) -> str:
        return self.to_mermaid()._repr_markdown_()

    # -- closing: what the tools hold open --------------------------------------------------------------

    def close(self) -> None:
        """Release what the bot's tools hold open: ``close()`` on every tool function that has one (the tools of
        :func:`llamabot.tools.mcp.mcp_tools`: their server process stops). ``with Bot(...) as bot:`` (or
        ``async with``) closes on exit."""
        tools = getattr(self, "tools", None) or {}
        for tool in tools.values() if isinstance(tools, dict) else tools:
            close = getattr(getattr(tool, "func", None), "close", None)
            if callable(close):
                close()


class AwaitedCall:
    """What the ``Async*`` names add to a bot: calling it returns the run's coroutine, so ``await bot(q)`` runs
    it on the event loop, as every ``Async*`` class does (``AsyncToolBot``, ``AsyncSimpleBot``...). One rule:
    an ``Async*`` bot is awaited; the plain name runs synchronously; both have ``arun``."""

    __slots__ = ()

    def __call__(self, *args: Any, **options: Any) -> Any:
        return self.arun(*args, **options)  # type: ignore[attr-defined]

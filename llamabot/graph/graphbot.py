"""The graph-bot base: what every bot built as a graph is (``AgentBot``, ``AoTBot``, ``ToTBot``, ``ANoTBot``).

    bot(query)                          run synchronously (a notebook, a script)
    await bot.arun(query)               run on the event loop (a service); any number of concurrent runs
    async for event in bot.astream(q)   run and yield RunEvents (decisions, tool calls, tokens, node steps...)
    bot.last_trace                      the trace of the last run started
    bot.to_mermaid()                    the graph as a mermaid diagram

A subclass builds its graph once (:meth:`set_graph`) and says how a run starts and ends: :meth:`new_state` (the
fresh, serialisable shared data of one run), :meth:`run_values` (live values kept beside it) and
:meth:`result`. The sync and async paths share every line but the flow's walk.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from llamabot.graph.flow import AsyncFlow, Flow
from llamabot.graph.mermaid import MermaidDiagram, to_mermaid
from llamabot.observe.events import EventHook, RunEvent
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Trace, run


class GraphBot:
    """Base class of bots that run a PocketFlow graph. ``hooks``: lifecycle hooks told about every run."""

    flow: Flow
    async_flow: AsyncFlow

    def __init__(self, *, hooks: Iterable[RunHooks] = ()):
        self.hooks: tuple[RunHooks, ...] = tuple(hooks)
        self.last_trace: Trace | None = None

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

    @contextmanager
    def _run(self, query: Any, options: dict[str, Any], hooks: Iterable[RunHooks], trace: Trace | None,
             outcome: list[Any]) -> Iterator[dict[str, Any]]:
        scope = run(type(self).__name__, hooks=(*self.hooks, *hooks), values=self.run_values(options), trace=trace,
                    **self.run_attributes(query))
        with scope as trace:
            self.last_trace = trace
            state = self.new_state(query, trace, options)
            try:
                yield state
            except BaseException as exc:
                self.failed(state, exc)
                raise
            value = self.result(state, trace)
            scope.span.attributes["result"] = value
            outcome += (value, trace)

    def run_sync(self, query: Any, *, hooks: Iterable[RunHooks] = (), trace: Trace | None = None,
                 **options: Any) -> tuple[Any, Trace]:
        """Run synchronously; returns ``(result, trace)`` (this run's own trace)."""
        outcome: list[Any] = []
        with self._run(query, options, hooks, trace, outcome) as state:
            self.flows(options)[0].run(state)
        return outcome[0], outcome[1]

    async def arun_with_trace(self, query: Any, *, hooks: Iterable[RunHooks] = (), trace: Trace | None = None,
                              **options: Any) -> tuple[Any, Trace]:
        """Like :meth:`arun`, also returning this run's own trace (``last_trace`` is shared by concurrent runs)."""
        outcome: list[Any] = []
        with self._run(query, options, hooks, trace, outcome) as state:
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
        hooks = (*options.pop("hooks", ()), EventHook(events.put_nowait))
        task = asyncio.create_task(self.arun_with_trace(query, hooks=hooks, trace=trace, **options))
        task.add_done_callback(lambda _: events.put_nowait(None))
        try:
            while (event := await events.get()) is not None:
                yield event
            exc = task.exception()
            if exc is not None:
                yield RunEvent("error", trace.trace_id, {"error": f"{type(exc).__name__}: {exc}"})
                raise exc
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    # -- looking at it ----------------------------------------------------------------------------------

    def to_mermaid(self) -> MermaidDiagram:
        """The graph as a mermaid diagram (displayed as a diagram in notebooks)."""
        return MermaidDiagram(to_mermaid(self.flow))

    def _repr_markdown_(self) -> str:
        return self.to_mermaid()._repr_markdown_()

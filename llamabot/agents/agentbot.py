"""AgentBot and AsyncAgentBot: the reference agent graph.

    DecideNode -(tool name)-> FuncNode -("decide")-> DecideNode        (one edge per registered tool)
    DecideNode -("decide")-> DecideNode                                (retry after invalid calls)
    terminal FuncNode (respond_to_user, ...) ends the run with shared["result"]

Every graph is built per bot: two bots never share a node or an edge. Every run gets a fresh shared dict
(see ``agent_state``). ``AgentBot.__call__`` keeps the conversation on the instance (for notebooks);
``AsyncAgentBot.arun`` is stateless per call unless the caller passes ``memory``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

from llamabot.bot.toolbot import ToolBot
from llamabot.graph.agent_state import new_run_state
from llamabot.graph.decision import RESPOND
from llamabot.observe.events import RunEvent
from llamabot.graph.flow import AsyncFlow, Flow
from llamabot.graph.nodes import DecideNode, FuncNode
from llamabot.graph.mermaid import MermaidDiagram, to_mermaid
from llamabot.models.messages import Message
from llamabot.models.seam import ChatModel, get_model
from llamabot.tools.defaults import DEFAULT_TOOLS
from llamabot.tools.tool import DECIDE, Tool, as_tool
from llamabot.observe.tracing import Trace, capture, run

DEFAULT_AGENT_PROMPT = (
    "You are a helpful agent. Solve the user's request step by step by calling the provided tools; "
    "use a tool for every computation or lookup instead of doing it yourself. "
    f"When you know the final answer, call {RESPOND} with it."
)


def merge_tools(tools: Iterable[Any]) -> dict[str, Tool]:
    """``DEFAULT_TOOLS`` plus the user's tools; a user tool replaces a default one of the same name."""
    merged: dict[str, Tool] = {}
    for item in (*DEFAULT_TOOLS, *tools):
        description = as_tool(item)
        merged[description.name] = description
    return merged


class AgentBot:
    """An agent that answers by calling tools, as a PocketFlow graph.

    ``tools``: ``@tool`` functions, added to ``DEFAULT_TOOLS``. ``model_name``: any LiteLLM model string, a
    chat model object (``ScriptedModel``), or ``None`` for the default. ``max_iterations``: model decisions per
    run before the run is forced to ``respond_to_user``. ``max_errors``: consecutive invalid calls or tool
    failures tolerated (each is shown to the model) before the run raises. ``history_limit``: at most this many
    messages after the current question are sent to the model. ``decide_node``: a custom decision node, wired
    to the same tool edges. ``completion_kwargs`` pass through to the model.
    """

    def __init__(
        self,
        tools: Iterable[Any] = (),
        system_prompt: str | None = None,
        model_name: str | ChatModel | None = None,
        max_iterations: int = 10,
        decide_node: Any = None,
        *,
        max_errors: int = 3,
        history_limit: int | None = 40,
        **completion_kwargs: Any,
    ):
        self.tools = merge_tools(tools)
        self.model = get_model(model_name)
        self.model_name = self.model.name
        prompt = system_prompt or DEFAULT_AGENT_PROMPT
        toolbot = ToolBot(prompt, self.model, tools=self.tools.values(), **completion_kwargs)
        final = None
        if RESPOND in self.tools:
            final = ToolBot(prompt, self.model, tools=self.tools.values(), tool_choice=RESPOND, **completion_kwargs)
        self.decide_node = decide_node or DecideNode(
            toolbot, final, max_iterations=max_iterations, max_errors=max_errors, history_limit=history_limit
        )
        self.tool_nodes = {name: FuncNode(t, max_errors=max_errors) for name, t in self.tools.items()}
        for name, node in self.tool_nodes.items():
            self.decide_node - name >> node
            node - (node.tool.loopback_name or DECIDE) >> self.decide_node
        self.decide_node - DECIDE >> self.decide_node
        self.flow = Flow(start=self.decide_node)
        self.async_flow = AsyncFlow(start=self.decide_node)
        self.memory: list[Message] = []
        self.last_trace: Trace | None = None

    def __call__(self, query: str, globals_dict: dict[str, Any] | None = None) -> Any:
        """Answer ``query``; returns what the terminal tool returned. The conversation stays on the bot."""
        with run(type(self).__name__, query=query) as trace:
            self.last_trace = trace
            shared = new_run_state(query, memory=self.memory, globals_dict=globals_dict, trace=trace)
            self.flow.run(shared)
        return _result(shared)

    def reset(self) -> None:
        """Forget the conversation kept by ``__call__``."""
        self.memory = []

    def to_mermaid(self) -> MermaidDiagram:
        """The graph as a mermaid diagram (displayed as a diagram in notebooks)."""
        return MermaidDiagram(to_mermaid(self.flow))

    def _repr_markdown_(self) -> str:
        return self.to_mermaid()._repr_markdown_()


def _result(shared: dict[str, Any]) -> Any:
    if not shared["_done"]:  # cannot happen with the strict flow; never return a stale or missing result
        raise RuntimeError(f"run {shared['trace_id']} ended without a terminal tool")
    return shared["result"]


class AsyncAgentBot(AgentBot):
    """The same graph run by an ``AsyncFlow``: ``await bot.arun(query)``; async tools are awaited.

    ``arun`` keeps nothing between calls: 1,000 concurrent runs on one instance never see each other's data.
    Pass ``memory`` (a list you own) to continue a conversation.
    """

    async def arun(
        self,
        query: str,
        globals_dict: dict[str, Any] | None = None,
        memory: list[Message] | None = None,
        *,
        _emit: Any = None,
    ) -> Any:
        """Answer ``query``; returns what the terminal tool returned."""
        result, _ = await self.arun_with_trace(query, globals_dict, memory, _emit=_emit)
        return result

    async def arun_with_trace(
        self,
        query: str,
        globals_dict: dict[str, Any] | None = None,
        memory: list[Message] | None = None,
        *,
        _emit: Any = None,
    ) -> tuple[Any, Trace]:
        """Like :meth:`arun`, also returning this run's own trace (``last_trace`` is shared by concurrent runs)."""
        with run(type(self).__name__, query=query) as trace:
            self.last_trace = trace
            shared = new_run_state(
                query, memory=memory if memory is not None else [], globals_dict=globals_dict, trace=trace, emit=_emit
            )
            await self.async_flow.run_async(shared)
        return _result(shared), trace

    async def astream(
        self, query: str, globals_dict: dict[str, Any] | None = None, memory: list[Message] | None = None
    ) -> AsyncIterator[RunEvent]:
        """Run ``query`` and yield :class:`RunEvent`s as they happen; the last is ``final_answer`` (or
        ``error``, after which the exception is raised). Closing the iterator early cancels the run."""
        events: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        trace = Trace()  # this run's own trace: its id is known even if the first step fails

        async def produce() -> Any:
            with capture(trace):
                return await self.arun(query, globals_dict, memory, _emit=events.put_nowait)

        task = asyncio.create_task(produce())
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

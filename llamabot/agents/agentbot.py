"""AgentBot and AsyncAgentBot: the reference agent graph.

    DecideNode -(tool name)-> FuncNode -("decide")-> DecideNode        (one edge per registered tool)
    DecideNode -("decide")-> DecideNode                                (retry after invalid calls)
    terminal FuncNode (respond_to_user, ...) ends the run with shared["result"]

Every graph is built per bot: two bots never share a node or an edge. Every run gets a fresh shared dict
(see ``agent_state``). ``AgentBot.__call__`` keeps the conversation on the instance (for notebooks);
``AsyncAgentBot.arun`` is stateless per call unless the caller passes ``memory``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llamabot.bot.toolbot import ToolBot
from llamabot.graph.agent_state import answer_open_calls, new_run_state
from llamabot.graph.decision import RESPOND
from llamabot.graph.graphbot import GraphBot
from llamabot.graph.nodes import DecideNode, FuncNode
from llamabot.graph.parallel_calls import ParallelCalls, cancel_early
from llamabot.models.messages import Message
from llamabot.models.seam import ChatModel, get_model
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Trace, current_run
from llamabot.observe.usage import UsageLimits
from llamabot.tools.defaults import DEFAULT_TOOLS
from llamabot.tools.tool import DECIDE, Tool, as_tool

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


class AgentBot(GraphBot):
    """An agent that answers by calling tools, as a PocketFlow graph.

    ``tools``: ``@tool`` functions, added to ``DEFAULT_TOOLS``. ``model_name``: any LiteLLM model string, a
    chat model object (``ScriptedModel``), or ``None`` for the default. ``max_iterations``: model decisions per
    run before the run is forced to ``respond_to_user``. ``max_errors``: consecutive invalid calls or tool
    failures tolerated (each is shown to the model) before the run raises. ``history_limit``: at most this many
    messages after the current question are sent to the model. ``decide_node``: a custom decision node, wired
    to the same tool edges. ``hooks``: lifecycle hooks told about every run. ``usage_limits``: a
    :class:`UsageLimits` every run obeys (a run stops with ``UsageLimitExceeded`` before a request that would exceed
    it). ``max_parallel_tools``: in async runs, how many independent calls of one reply may run at once (their
    results still reach the model in its order; 1: one at a time, as sync runs always do; see
    :mod:`llamabot.graph.parallel_calls`). ``completion_kwargs`` pass through to the model.

    ``bot(query)`` keeps the conversation on the bot (``bot.memory``, for notebooks); ``await bot.arun(query)``
    keeps nothing between calls unless the caller passes ``memory`` (a list it owns), so any number of concurrent
    runs on one instance never see each other's data. Both accept ``globals_dict`` (the caller's variables, for
    tools with a hidden ``_globals_dict``).
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
        hooks: Iterable[RunHooks] = (),
        usage_limits: UsageLimits | None = None,
        max_parallel_tools: int = 8,
        **completion_kwargs: Any,
    ):
        super().__init__(hooks=hooks, usage_limits=usage_limits)
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
        parallel = ParallelCalls(self.tools, max_parallel_tools)
        self.tool_nodes = {
            name: FuncNode(t, max_errors=max_errors, parallel=parallel if max_parallel_tools > 1 else None)
            for name, t in self.tools.items()
        }
        for name, node in self.tool_nodes.items():
            self.decide_node - name >> node
            node - (node.tool.loopback_name or DECIDE) >> self.decide_node
        self.decide_node - DECIDE >> self.decide_node
        self.set_graph(self.decide_node)
        respond = self.tools.get(RESPOND)
        if respond is not None and "response" in respond.parameters.get("properties", {}):
            self.answer_arguments = {RESPOND: "response"}
        self.memory: list[Message] = []

    def __call__(self, query: str, globals_dict: dict[str, Any] | None = None, **options: Any) -> Any:
        """Answer ``query``; returns what the terminal tool returned. The conversation stays on the bot
        (unless ``memory=`` is given)."""
        options.setdefault("memory", self.memory)
        return self.run_sync(query, globals_dict=globals_dict, **options)[0]

    def new_state(self, query: str, trace: Trace, options: dict[str, Any]) -> dict[str, Any]:
        memory = options.get("memory")
        return new_run_state(query, memory=memory if memory is not None else [], trace_id=trace.trace_id)

    def run_values(self, options: dict[str, Any]) -> dict[str, Any]:
        globals_dict = options.get("globals_dict")
        return {"globals_dict": globals_dict if globals_dict is not None else {}}

    def result(self, state: dict[str, Any], trace: Trace) -> Any:
        if not state["_done"]:  # cannot happen with the strict flow; never return a stale or missing result
            raise RuntimeError(f"run {state['trace_id']} ended without a terminal tool")
        return state["result"]

    def failed(self, state: dict[str, Any], error: BaseException) -> None:
        # Whatever ended the run, leave every tool call answered: a later request on the same memory must
        # satisfy strict providers; calls still running early (async runs) are cancelled.
        cancel_early(current_run())
        answer_open_calls(state["memory"], state["_run_start"], f"Not run: the run failed ({type(error).__name__}).")

    def reset(self) -> None:
        """Forget the conversation kept by ``__call__``."""
        self.memory = []


class AsyncAgentBot(AgentBot):
    """The name services use (``await AsyncAgentBot(...).arun(query)``): the same bot as :class:`AgentBot`,
    whose ``arun`` never keeps a conversation unless given ``memory``."""

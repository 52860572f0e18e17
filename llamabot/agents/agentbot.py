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

from llamabot.agents.approval import ApprovalRequired
from llamabot.agents.decision import RESPOND
from llamabot.agents.flowbot import AgentRuns
from llamabot.agents.graphbot import AwaitedCall, GraphBot
from llamabot.agents.nodes import DecideNode, FuncNode
from llamabot.agents.parallel_calls import ParallelCalls
from llamabot.bot.options import bot_settings, check_shared, not_a_model, strict_options
from llamabot.bot.toolbot import ToolBot
from llamabot.errors import ToolDefinitionError
from llamabot.models.base import ChatModel
from llamabot.models.messages import Message
from llamabot.models.resolve import get_model
from llamabot.models.settings import ModelSettings
from llamabot.observe.hooks import RunHooks
from llamabot.observe.usage import UsageLimits
from llamabot.tools.approval import Approver
from llamabot.tools.defaults import DEFAULT_TOOLS
from llamabot.tools.output import output_classes, output_tool, typed_output
from llamabot.tools.tool import DECIDE, Tool, as_tool, tools_by_name

DEFAULT_AGENT_PROMPT = (
    "You are a helpful agent. Solve the user's request step by step by calling the provided tools; "
    "use a tool for every computation or lookup instead of doing it yourself. "
    f"When you know the final answer, call {RESPOND} with it."
)


def merge_tools(tools: Iterable[Any]) -> dict[str, Tool]:
    """``DEFAULT_TOOLS`` plus the user's tools; a user tool replaces a default one of the same name.
    :class:`ToolDefinitionError` for two different user tools of one name (one would be dropped) and for a tool
    named ``"decide"`` (the graph's edge back to the decision: the tool would never run)."""
    given = tools_by_name(tools)
    if DECIDE in given:
        raise ToolDefinitionError(f"a tool may not be named {DECIDE!r}: the agent graph uses that action to go "
                                  "back to the decision node; rename it (@tool(name=...))")
    return {**tools_by_name(DEFAULT_TOOLS), **given}


class AgentBot(AgentRuns, GraphBot):
    """An agent that answers by calling tools, as a PocketFlow graph.

    ``tools`` (the one positional argument): ``@tool`` functions or :class:`Tool` objects (a plain function is a
    ``ToolDefinitionError``: decorate it), added to ``DEFAULT_TOOLS``; two different tools of one name are an
    error. Every other option is a keyword. ``model``: any LiteLLM model string, a chat model object
    (``ScriptedModel``), or ``None`` for the default. ``system_prompt``: the agent's instructions.
    ``model_settings``: provider settings (``{"temperature": 0, "max_tokens": 512}``; see
    :class:`~llamabot.models.settings.ModelSettings`), the only values that reach the provider.
    ``max_iterations``: model decisions per run before the run is forced to ``respond_to_user``. ``max_errors``:
    consecutive invalid calls or tool failures tolerated (each is shown to the model) before the run raises.
    ``history_limit``: at most this many messages after the current question are sent to the model.
    ``decide_node``: a custom decision node, wired to the same tool edges. ``hooks``: lifecycle hooks told about
    every run. ``usage_limits``: a :class:`UsageLimits` every run obeys (a run stops with ``UsageLimitExceeded``
    before a request that would exceed it). ``approver``: decides in-process on calls of tools marked
    ``requires_approval`` (``approver(request) -> Decision | bool``); without one a run pauses before such calls
    with :class:`~llamabot.agents.approval.ApprovalRequired` (continue it with ``bot.resume(paused, decisions)``).
    ``max_parallel_tools``: in async runs, how many independent calls of one reply may run at once (their
    results still reach the model in its order; 1: one at a time, as sync runs always do; see
    :mod:`llamabot.agents.parallel_calls`). ``output_type``: the run returns a validated instance of it (a pydantic
    model, dataclass, TypedDict or any type pydantic validates): ``respond_to_user``'s ``response`` is typed, an
    invalid answer is shown to the model (``max_errors`` times), then :class:`StructuredOutputError` (see
    :mod:`llamabot.tools.output`). An unknown keyword is a ``TypeError``.

    ``bot(query)`` keeps the conversation on the bot (``bot.memory``, for notebooks); ``await bot.arun(query)``
    keeps nothing between calls unless the caller passes ``memory`` (a list it owns), so any number of concurrent
    runs on one instance never see each other's data. Both accept ``globals_dict`` (the caller's variables, for
    tools with a hidden ``_globals_dict``) and ``approver``.
    """

    @strict_options
    def __init__(
        self,
        tools: Iterable[Any] = (),
        *,
        system_prompt: str | None = None,
        model: str | ChatModel | None = None,
        model_settings: ModelSettings | dict[str, Any] | None = None,
        max_iterations: int = 10,
        decide_node: Any = None,
        max_errors: int = 3,
        history_limit: int | None = 40,
        hooks: Iterable[RunHooks] = (),
        usage_limits: UsageLimits | None = None,
        approver: Approver | None = None,
        max_parallel_tools: int = 8,
        output_type: Any = None,
    ):
        super().__init__(hooks=hooks, usage_limits=usage_limits, approver=approver)
        not_a_model(type(self).__name__, "tools", tools)
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
            raise TypeError(f"{type(self).__name__}(tools=...) takes an iterable of tools, got {type(tools).__name__}")
        check_shared(type(self).__name__, system_prompt=system_prompt, prompt_optional=True)
        settings = bot_settings(self, model_settings)
        self.tools = merge_tools(tools)
        self.output_type = output_type
        if output_type is not None:  # the answer is delivered as a validated output_type (tools.output)
            if any(as_tool(t).name == RESPOND for t in tools):
                raise TypeError(f"{type(self).__name__}: give output_type= or a {RESPOND} tool of your own, not both")
            self.tools[RESPOND] = output_tool(output_type)
            del self.tools["return_object_to_user"]  # it would return any object, whatever the output type
            self.output_adapter = typed_output(self.tools[RESPOND])
            self.state_classes = output_classes(output_type)  # a typed answer in a checkpoint is restored
        self.model = get_model(model)
        self.model_name = self.model.name
        self.model_settings = settings
        prompt = system_prompt or DEFAULT_AGENT_PROMPT
        toolbot = ToolBot(prompt, model=self.model, tools=self.tools.values(), model_settings=settings)
        final = None
        if RESPOND in self.tools:
            final = ToolBot(prompt, model=self.model, tools=self.tools.values(), tool_choice=RESPOND,
                            model_settings=settings)
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
        try:
            return self.run_sync(query, globals_dict=globals_dict, **options)[0]
        except ApprovalRequired as paused:
            if options["memory"] is self.memory:  # resuming it continues this conversation (see _resumed)
                self._paused_run = paused.paused.checkpoint.trace_id
            raise

    def reset(self) -> None:
        """Forget the conversation kept by ``__call__``."""
        self.memory = []
        self._paused_run = None

    #: the trace id of the run ``__call__`` started on ``memory`` that paused for approval (``None``: none)
    _paused_run: str | None = None

    def _resumed(self, state: dict[str, Any]) -> None:
        """When ``state`` is that of the run ``__call__`` paused, resumed, its conversation becomes ``memory``:
        the conversation goes on with what the resumed run did (not "Not run: the run paused" for calls that ran)."""
        if self._paused_run is not None and state.get("trace_id") == self._paused_run:
            self.memory = state["memory"]

    def result(self, state: dict[str, Any], trace: Any) -> Any:
        self._resumed(state)
        return super().result(state, trace)

    def failed(self, state: dict[str, Any], error: BaseException) -> None:
        super().failed(state, error)
        self._resumed(state)


class AsyncAgentBot(AwaitedCall, AgentBot):
    """The name services use (``await AsyncAgentBot(...).arun(query)``, or ``await bot(query)``): the same bot as
    :class:`AgentBot`, except that calling it returns the run's coroutine (every ``Async*`` bot is awaited);
    ``arun`` never keeps a conversation unless given ``memory``."""

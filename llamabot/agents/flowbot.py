"""Any hand-made graph as a bot: ``from_flow(start, state=..., result=...)``.

A flow wired by hand from ``DecideNode``/``FuncNode`` (or any nodes) gets the whole surface of a graph bot:
``bot(q)``, ``await bot.arun(q)``, ``bot.astream(q)``, hooks, usage limits, approvals (pause and ``resume``),
``deps=``, checkpoints, ``to_mermaid()``, and durable runs (a ``Durable`` factory may return it)::

    from llamabot.agents import DecideNode, FuncNode, from_flow

    decide = DecideNode(ToolBot(PROMPT, tools=tools))
    for t in tools:
        node = FuncNode(t)
        decide - node.name >> node
        node - "decide" >> decide
    decide - "decide" >> decide
    bot = from_flow(decide)                   # an agent-shaped graph: the agent's run state and result
    bot("What is 12 plus 30?")

A graph with a ``DecideNode`` is *agent-shaped*: a run's state is the agent's (:mod:`agent_state`), its result is
what the terminal tool returned, and a run that fails leaves every tool call answered, exactly as ``AgentBot``
(which is such a bot, with the reference graph). Any other graph says how a run starts and what it returns:
``state(query) -> dict`` (default ``{"query": query}``) and ``result``: a key of the final state (default
``"result"``) or ``result(state) -> value``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import TypeAdapter

from llamabot.agents.agent_state import answer_open_calls, new_run_state, restored_run_state
from llamabot.agents.approval import ApprovalRequired
from llamabot.agents.decision import RESPOND
from llamabot.agents.graphbot import RUN_OPTIONS, GraphBot
from llamabot.agents.nodes import DecideNode, FuncNode
from llamabot.agents.parallel_calls import settle_early
from llamabot.graph.mermaid import walk
from llamabot.observe.hooks import RunHooks
from llamabot.observe.tracing import Trace, current_run
from llamabot.observe.usage import UsageLimits
from llamabot.tools.approval import Approver
from llamabot.tools.output import checked_output, output_classes, typed_output
from llamabot.tools.tool import Tool


class AgentRuns:
    """What a run of an agent-shaped graph is (mixed into a :class:`GraphBot` that has ``tools``): its state is
    the agent run state, its result what the terminal tool returned; a failed run leaves every call answered."""

    tools: dict[str, Tool]
    run_options = RUN_OPTIONS | {"memory", "globals_dict"}

    def new_state(self, query: str, trace: Trace, options: dict[str, Any]) -> dict[str, Any]:
        memory = options.get("memory")
        return new_run_state(query, memory=memory if memory is not None else [], trace_id=trace.trace_id)

    def run_values(self, options: dict[str, Any]) -> dict[str, Any]:
        globals_dict = options.get("globals_dict")
        return {"globals_dict": globals_dict if globals_dict is not None else {}}

    #: the run's output type's validator (``output_type=``), or ``None``: any terminal tool's value is the result
    output_adapter: TypeAdapter[Any] | None = None

    def result(self, state: dict[str, Any], trace: Trace) -> Any:
        if not state["_done"]:  # cannot happen with the strict flow; never return a stale or missing result
            raise RuntimeError(f"run {state['trace_id']} ended without a terminal tool")
        if self.output_adapter is not None:  # whichever terminal tool ended the run, the result is of the type
            return checked_output(self.output_adapter, state["result"], "the terminal tool")
        return state["result"]

    def failed(self, state: dict[str, Any], error: BaseException) -> None:
        # Whatever ended the run, leave every tool call answered: a later request on the same memory must
        # satisfy strict providers; calls still running early (async runs) are cancelled, and those that ran early
        # are answered with what they did. A paused run's checkpoint was taken before this, so resuming it still
        # sees its calls open.
        early = settle_early(current_run())
        text = ("Not run: the run paused for approval; it continues with bot.resume(...)."
                if isinstance(error, ApprovalRequired) else f"Not run: the run failed ({type(error).__name__}).")
        answer_open_calls(state["memory"], state["_run_start"], text, early)

    def restored_action(self, state: Any, action: str | None) -> str | None:
        # a checkpoint may be tampered with: the shape checked, the waiting calls validated again (agent_state)
        return restored_run_state(state, action, self.tools)


class FlowBot(GraphBot):
    """A graph bot over a graph made by hand (see the module docstring); made by :func:`from_flow`."""

    def __init__(self, start: Any, *, state: Callable[[Any], dict[str, Any]] | None = None,
                 result: str | Callable[[dict[str, Any]], Any] = "result", hooks: Iterable[RunHooks] = (),
                 usage_limits: UsageLimits | None = None, approver: Approver | None = None, name: str | None = None):
        super().__init__(hooks=hooks, usage_limits=usage_limits, approver=approver)
        if state is not None and not callable(state):
            raise TypeError(f"state must be a callable (query -> dict), got {type(state).__name__}")
        if not callable(result) and not isinstance(result, str):
            raise TypeError(f"result must be a state key or a callable (state -> value), got {type(result).__name__}")
        self.set_graph(start)
        self.state_of, self.result_of, self.name = state, result, name or type(self).__name__

    def new_state(self, query: Any, trace: Trace, options: dict[str, Any]) -> dict[str, Any]:
        state = {"query": query} if self.state_of is None else self.state_of(query)
        if type(state) is not dict:
            raise TypeError(f"{self.name}: state(query) must return a dict (the run's shared data), "
                            f"got {type(state).__name__}")
        return state

    def result(self, state: dict[str, Any], trace: Trace) -> Any:
        if callable(self.result_of):
            return self.result_of(state)
        if self.result_of not in state:
            raise KeyError(f"{self.name}: the run ended without {self.result_of!r} in its state "
                           f"(it has {', '.join(map(repr, sorted(map(str, state))))}); pass result=... to from_flow")
        return state[self.result_of]


class AgentFlowBot(AgentRuns, FlowBot):
    """A hand-made agent-shaped graph as a bot: the agent's runs (:class:`AgentRuns`) over its own nodes.
    ``tools``: those of its tool nodes. Unlike ``AgentBot(...)(q)`` it keeps no conversation between calls
    (pass ``memory=`` to continue one)."""

    def __init__(self, start: Any, **options: Any):
        super().__init__(start, **options)
        nodes = walk(self.flow.start_node)
        self.tools = {n.tool.name: n.tool for n in nodes if isinstance(n, FuncNode)}
        respond = self.tools.get(RESPOND)
        if respond is not None and "response" in respond.parameters.get("properties", {}):
            self.answer_arguments = {RESPOND: "response"}
        self.output_adapter = typed_output(respond)  # a typed respond_to_user (tools.output): the run's type
        if self.output_adapter is not None:
            self.state_classes = output_classes(respond.func.output_type)  # type: ignore[union-attr]


def from_flow(start: Any, *, state: Callable[[Any], dict[str, Any]] | None = None,
              result: str | Callable[[dict[str, Any]], Any] | None = None, **options: Any) -> FlowBot:
    """The bot of the graph that begins at ``start`` (a node, or a flow whose start node is used); see the
    module docstring. ``options``: ``hooks``, ``usage_limits``, ``approver``, ``name``."""
    first = getattr(start, "start_node", None) or start
    if not hasattr(first, "successors"):
        raise TypeError(f"from_flow takes the graph's start node or a Flow, got {type(start).__name__}")
    agent = any(isinstance(n, DecideNode) for n in walk(first))
    if agent and state is None and result is None:
        return AgentFlowBot(first, **options)
    return FlowBot(first, state=state, result="result" if result is None else result, **options)


__all__ = ["AgentFlowBot", "AgentRuns", "FlowBot", "from_flow"]

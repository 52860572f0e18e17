"""Topology of the reference agent graph, custom decision nodes, strict routing, mermaid."""

from __future__ import annotations

import pocketflow
import pytest

from llamabot import AgentBot, ScriptedModel, to_mermaid, tool
from llamabot.agents.nodes import DecideNode, FuncNode
from llamabot.graph.flow import Flow, GraphRoutingError
from llamabot.models.scripted import tool_call
from llamabot.toolkits.calculator import CALCULATOR_TOOLS, add, multiply
from llamabot.tools import DEFAULT_TOOLS

DEFAULT_NAMES = [t.tool.name for t in DEFAULT_TOOLS]


def test_agt_graph_010_one_edge_per_tool_and_loopbacks_to_the_decision_node():
    bot = AgentBot(tools=[add, multiply], model=ScriptedModel())
    decide = bot.flow.start_node
    assert isinstance(decide, DecideNode)
    assert sorted(decide.successors) == sorted([*DEFAULT_NAMES, "add", "multiply", "decide"])
    assert decide.successors["decide"] is decide  # retry after invalid calls
    for name in [*DEFAULT_NAMES, "add", "multiply"]:
        node = decide.successors[name]
        assert isinstance(node, FuncNode) and node.tool.name == name
        assert node.successors == {"decide": decide}
    assert decide.successors["respond_to_user"].terminal
    assert decide.successors["return_object_to_user"].terminal
    assert not decide.successors["add"].terminal


def test_agt_graph_010_user_tool_replaces_a_default_of_the_same_name():
    @tool(loopback_name=None)
    def respond_to_user(response: str, confidence: float = 1.0) -> str:
        """Answer with a confidence."""
        return f"{response} ({confidence})"

    bot = AgentBot(tools=[respond_to_user], model=ScriptedModel([tool_call("respond_to_user", response="hi")]))
    assert bot.tools["respond_to_user"].func is respond_to_user
    assert bot("q") == "hi (1.0)"


def test_agt_graph_020_custom_decide_node_is_wired_to_the_same_tool_edges():
    class AlwaysAdd(pocketflow.Node):
        def post(self, shared, prep_res, exec_res):
            shared["func_call"] = _pending("add", {"a": 1.0, "b": 2.0})
            return "add"

    custom = AlwaysAdd()
    bot = AgentBot(tools=[add], model=ScriptedModel(), decide_node=custom)
    assert bot.decide_node is custom and bot.flow.start_node is custom
    assert set(custom.successors) == {*DEFAULT_NAMES, "add", "decide"}
    assert custom.successors["add"].successors["decide"] is custom


def _pending(name, arguments):
    from llamabot.agents.agent_state import PendingCall

    return PendingCall("c1", name, arguments, "")


def test_agt_graph_030_two_bots_never_share_nodes_or_edges():
    model_a = ScriptedModel([tool_call("respond_to_user", response="from A")], name="a")
    model_b = ScriptedModel([tool_call("respond_to_user", response="from B")], name="b")
    bot_a = AgentBot(tools=[add], model=model_a)
    bot_b = AgentBot(tools=[add], model=model_b)
    nodes_a = {id(n) for n in [bot_a.decide_node, *bot_a.tool_nodes.values()]}
    nodes_b = {id(n) for n in [bot_b.decide_node, *bot_b.tool_nodes.values()]}
    assert nodes_a.isdisjoint(nodes_b)
    assert bot_a.tool_nodes["add"].successors["decide"] is bot_a.decide_node
    assert bot_a("q") == "from A"  # bot A still decides with its own node and model after B was built
    assert len(model_a.requests) == 1 and len(model_b.requests) == 0


def test_agt_graph_040_an_action_without_an_edge_raises_instead_of_ending_silently():
    class Lost(pocketflow.Node):
        def post(self, shared, prep_res, exec_res):
            return "nowhere"

    node = Lost()
    node - "somewhere" >> Lost()
    with pytest.raises(GraphRoutingError, match="'nowhere'.*'somewhere'"):
        Flow(start=node).run({})


def test_agt_obs_030_mermaid_renders_every_tool_and_marks_terminals():
    bot = AgentBot(tools=CALCULATOR_TOOLS, model=ScriptedModel())
    source = str(bot.to_mermaid())
    assert source.startswith("flowchart LR")
    for name in [*DEFAULT_NAMES, "add", "subtract", "multiply", "divide", "power"]:
        assert f'["{name}"]' in source
    assert '(["respond_to_user"]):::terminal' in source
    assert '(["add"])' not in source
    assert '-->|"multiply"|' in source and '-->|"decide"|' in source
    assert bot._repr_markdown_().startswith("```mermaid\nflowchart LR")


def test_agt_obs_030_mermaid_renders_any_pocketflow_flow():
    class A(pocketflow.Node):
        pass

    a, b = A(), A()
    a - "go" >> b
    b >> a
    source = to_mermaid(pocketflow.Flow(start=a))
    assert source.count('["A"]') == 2
    assert '-->|"go"|' in source and '-->|"default"|' in source


def test_agt_graph_040_a_node_without_an_action_follows_its_default_edge_like_pocketflow():
    class Step(pocketflow.Node):
        def post(self, shared, prep_res, exec_res):
            shared.setdefault("seen", []).append(self)

    first, second = Step(), Step()
    first >> second
    shared: dict = {}
    Flow(start=first).run(shared)
    assert len(shared["seen"]) == 2


async def test_agt_graph_050_flows_leave_a_dual_nodes_own_params_alone_and_give_other_nodes_the_flow_params():
    import pocketflow

    from llamabot.graph.flow import AsyncFlow, DualNode, Flow

    class Own(DualNode):
        def __init__(self):
            super().__init__()
            self.params = {"max_tokens": 40}  # a DualNode's own settings (one node serves every run)

        def exec(self, _):
            return dict(self.params)

        async def exec_async(self, _):
            return dict(self.params)

        def post(self, shared, _prep, seen):
            shared["dual"] = seen
            return "next"

    class Plain(pocketflow.Node):
        def post(self, shared, _prep, _exec):
            shared["plain"] = dict(self.params)

    own, plain = Own(), Plain()
    own - "next" >> plain
    for flow in (Flow(start=own), AsyncFlow(start=own)):
        flow.set_params({"run": 1})
        shared: dict = {}
        if isinstance(flow, AsyncFlow):
            await flow.run_async(shared)
        else:
            flow.run(shared)
        assert shared == {"dual": {"max_tokens": 40}, "plain": {"run": 1}}
        assert own.params == {"max_tokens": 40} and plain.params == {}  # the plain node ran as a copy


async def test_agt_graph_060_a_flow_subclass_keeps_its_own_prep_and_post_like_pocketflow():
    """A flow subclass that writes prep/post gets them called, as in pocketflow; a plain flow returns the last action."""
    from llamabot.graph.flow import AsyncFlow, DualNode, Flow

    class Mark(DualNode):
        span_kind = None

        def post(self, shared, _prep, _exec):
            shared["walked"] = True

    class Framed(Flow):
        def prep(self, shared):
            shared["prep"] = True

        def post(self, shared, prep_res, exec_res):
            return "framed"

    class AsyncFramed(AsyncFlow):
        async def prep_async(self, shared):
            shared["prep"] = True

        async def post_async(self, shared, prep_res, exec_res):
            return "framed"

    shared: dict = {}
    assert Framed(start=Mark()).run(shared) == "framed" and shared == {"prep": True, "walked": True}
    shared = {}
    assert await AsyncFramed(start=Mark()).run_async(shared) == "framed" and shared == {"prep": True, "walked": True}
    shared = {}
    assert Flow(start=Mark()).run(shared) is None and shared == {"walked": True}


def test_agt_viz_020_one_escape_makes_any_text_a_safe_mermaid_label():
    from llamabot.graph.mermaid import escape_label

    assert escape_label('say "hi" [now] {x} | a<b & c>d') == (
        "say #quot;hi#quot; #91;now#93; #123;x#125; #124; a#lt;b #amp; c#gt;d")
    assert escape_label("one\n  two\tthree", limit=8) == "one two…"

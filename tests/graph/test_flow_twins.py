"""The flow's two walks are one logic (AGT-GRAPH-065): ``Flow`` and ``AsyncFlow`` written as two bodies that differ
only by ``await``; on random graphs (DualNodes, plain pocketflow nodes, async nodes; branching, loops, dead ends,
failing nodes) both walk the same nodes, end with the same action, record the same spans and raise the same
errors."""

from __future__ import annotations

import asyncio

import pocketflow
from hypothesis import given, settings
from hypothesis import strategies as st

from llamabot.graph.flow import AsyncFlow, DualNode, Flow, GraphRoutingError
from llamabot.observe.tracing import Trace, capture


def make_graph(spec):
    """Nodes from ``spec``: per node (kind, edges, fails_at); each step appends its name to shared["walk"] and
    picks the edge by the step count, so the walk is a pure function of the graph."""
    nodes = []
    for index, (kind, _, fails_at) in enumerate(spec):
        name = f"n{index}"

        def choose(shared, name=name, index=index, fails_at=fails_at):
            shared["walk"].append(name)
            step = len(shared["walk"])
            if step == fails_at:
                raise ValueError(f"{name} failed at step {step}")
            if step >= 25:
                return None  # the walk ends (no edge named None)
            edges = spec[index][1]
            return edges[step % len(edges)] if edges else None

        if kind == "dual":
            node = type(f"Dual{index}", (DualNode,), {
                "span_kind": "node", "span_name": name,
                "span_attributes": lambda self, prep_res: {},
                "prep": lambda self, shared: shared,
                "exec": lambda self, shared: None,
                "post": lambda self, shared, prep_res, exec_res, choose=choose: choose(shared)})()
        elif kind == "plain":
            node = type(f"Plain{index}", (pocketflow.Node,), {
                "post": lambda self, shared, prep_res, exec_res, choose=choose: choose(shared)})()
        else:
            async def post_async(self, shared, prep_res, exec_res, choose=choose):
                return choose(shared)

            node = type(f"Async{index}", (pocketflow.AsyncNode,), {"post_async": post_async})()
        nodes.append(node)
    for index, (_, edges, _) in enumerate(spec):
        for edge in edges:
            target = int(edge[1:]) % len(nodes) if edge != "missing" else None
            if target is not None:
                nodes[index] - edge >> nodes[target]
    return nodes[0]


node_spec = st.tuples(
    st.sampled_from(["dual", "plain", "async"]),
    st.lists(st.sampled_from(["e0", "e1", "e2", "e3", "missing"]), max_size=3, unique=True),
    st.integers(min_value=0, max_value=30),  # the step at which it fails (0 or past the end: never)
)


def walk(flow_cls, spec):
    shared = {"walk": []}
    trace = Trace()
    outcome = None
    with capture(trace):
        try:
            if flow_cls is Flow:
                outcome = ("ended", Flow(start=make_graph(spec)).run(shared))
            else:
                outcome = ("ended", asyncio.run(AsyncFlow(start=make_graph(spec)).run_async(shared)))
        except (ValueError, GraphRoutingError) as exc:
            outcome = (type(exc).__name__, str(exc))
    spans = [(s.name, s.attributes.get("action"), s.error) for s in trace.spans if s.category == "node"]
    return shared["walk"], outcome, spans


@settings(max_examples=150, deadline=None)
@given(st.lists(node_spec, min_size=1, max_size=6))
def test_agt_graph_065_sync_and_async_flows_walk_random_graphs_the_same_way(spec):
    if any(kind == "async" for kind, _, _ in spec):  # a sync flow cannot run an async node: compare async only
        first, second = walk(AsyncFlow, spec), walk(AsyncFlow, spec)
        assert first == second
        return
    assert walk(Flow, spec) == walk(AsyncFlow, spec)

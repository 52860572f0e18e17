"""Topological layers and cycle reports on graphlib, shared by AoT and ANoT (GRAPH-LAYERS-*)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llamabot.errors import DependencyCycleError, LlamabotError
from llamabot.graph.layers import topological_layers


def test_graph_layers_010_independent_nodes_share_the_first_layer_in_input_order():
    assert topological_layers({"c": [], "a": [], "b": []}) == [["c", "a", "b"]]


def test_graph_layers_010_each_node_comes_in_the_layer_after_its_latest_dependency():
    deps = {"c2": [], "c1": [], "agg": ["c1", "c2"], "c3": ["c1"], "final": ["agg", "c3"]}
    assert topological_layers(deps) == [["c2", "c1"], ["agg", "c3"], ["final"]]


def test_graph_layers_010_an_empty_graph_has_no_layers():
    assert topological_layers({}) == []


def test_graph_layers_020_dependencies_that_are_not_nodes_are_ignored():
    assert topological_layers({1: [99], 2: [1, 98]}) == [[1], [2]]


def test_graph_layers_030_a_long_chain_needs_no_recursion():
    n = 20_000
    layers = topological_layers({i: [i + 1] if i < n else [] for i in range(1, n + 1)})
    assert len(layers) == n and layers[0] == [n] and layers[-1] == [1]


def test_graph_layers_040_a_cycle_error_carries_the_cycle_in_dependency_order_and_the_blocked_nodes():
    deps = {"x": [], "a": ["c"], "b": ["a"], "c": ["b", "x"], "final": ["c"], "free": ["x"]}
    with pytest.raises(DependencyCycleError) as info:
        topological_layers(deps)
    error = info.value
    assert error.cycle == ("a", "c", "b", "a")  # a depends on c, c on b, b on a; starts at the first in input order
    assert error.blocked == ("a", "b", "c", "final")
    assert "dependency cycle: a -> c -> b -> a" in str(error)
    assert isinstance(error, ValueError) and isinstance(error, LlamabotError)


def test_graph_layers_040_a_self_loop_is_a_cycle():
    with pytest.raises(DependencyCycleError) as info:
        topological_layers({1: [], 2: [2]})
    assert info.value.cycle == (2, 2) and info.value.blocked == (2,)


def test_graph_layers_040_every_separate_cycle_is_reported():
    deps = {1: [2], 2: [1], 3: [], 4: [5], 5: [4], 6: [5]}
    with pytest.raises(DependencyCycleError) as info:
        topological_layers(deps)
    assert {frozenset(c) for c in info.value.cycles} == {frozenset({1, 2}), frozenset({4, 5})}
    assert info.value.cycle == info.value.cycles[0]
    assert info.value.blocked == (1, 2, 4, 5, 6)


@st.composite
def dags(draw):
    """Nodes 0..n-1, each depending on some earlier ones, listed in a random order."""
    n = draw(st.integers(min_value=0, max_value=25))
    deps = {i: draw(st.lists(st.integers(0, i - 1), max_size=4, unique=True)) if i else [] for i in range(n)}
    order = draw(st.permutations(list(deps)))
    return {node: deps[node] for node in order}


@settings(max_examples=150, deadline=None)
@given(dags())
def test_graph_layers_050_every_node_appears_once_after_all_its_dependencies_as_early_as_possible(deps):
    layers = topological_layers(deps)
    flat = [node for layer in layers for node in layer]
    assert sorted(flat) == sorted(deps)
    layer_of = {node: index for index, layer in enumerate(layers) for node in layer}
    position = {node: index for index, node in enumerate(deps)}
    for node, node_deps in deps.items():
        assert all(layer_of[d] < layer_of[node] for d in node_deps)
        assert layer_of[node] == (max((layer_of[d] for d in node_deps), default=-1) + 1)
    for layer in layers:
        assert layer == sorted(layer, key=position.__getitem__)  # input order within a layer


@settings(max_examples=100, deadline=None)
@given(dags(), st.data())
def test_graph_layers_050_an_added_back_edge_is_reported_as_a_real_cycle(deps, data):
    edges = [(node, dep) for node, node_deps in deps.items() for dep in node_deps]
    if not edges:
        return
    node, dep = data.draw(st.sampled_from(edges))
    cyclic = {**deps, dep: [*deps[dep], node]}  # dep now also depends on node, which depends on dep
    with pytest.raises(DependencyCycleError) as info:
        topological_layers(cyclic)
    cycle = info.value.cycle
    assert cycle[0] == cycle[-1]
    assert all(b in cyclic[a] for a, b in zip(cycle, cycle[1:], strict=False))  # each node depends on the next
    assert set(cycle) <= set(info.value.blocked)

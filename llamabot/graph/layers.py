"""Topological layers of a dependency graph, on the standard library's :class:`graphlib.TopologicalSorter`.

Pure: no I/O, no llamabot imports but the error type. One implementation for every DAG in llamabot: AoT plans
(atoms and their ``dependsOn``), ANoT's LWT scripts (steps and their ``{(id)}`` references). Each layer holds
the nodes whose dependencies are all in earlier layers, with at least one in the layer just before (graphlib's
``get_ready`` batches), so the nodes of a layer are independent of each other and may run concurrently.
graphlib walks the graph without recursion, so a plan of thousands of chained atoms is fine.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from graphlib import CycleError, TopologicalSorter
from typing import TypeVar

from llamabot.errors import DependencyCycleError

K = TypeVar("K", bound=Hashable)


def topological_layers(dependencies: Mapping[K, Iterable[K]]) -> list[list[K]]:
    """``{node: its dependencies}`` -> layers of nodes, each node after all its dependencies.

    Inside a layer the nodes keep the mapping's order. A dependency that is not a key of the mapping is
    ignored (reporting it is the caller's check). Raises :class:`DependencyCycleError` with the cycle(s) and
    every node they block.
    """
    graph = {node: tuple(dict.fromkeys(deps)) for node, deps in dependencies.items()}
    order = {node: index for index, node in enumerate(graph)}
    sorter: TopologicalSorter[K] = TopologicalSorter()
    for node, deps in graph.items():
        sorter.add(node, *(dep for dep in deps if dep in order))
    try:
        sorter.prepare()
    except CycleError as exc:
        raise _cycle_error(graph, order, exc.args[1]) from None
    layers: list[list[K]] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=order.__getitem__)
        sorter.done(*ready)
        layers.append(ready)
    return layers


def _cycle_error(graph: dict[K, tuple[K, ...]], order: dict[K, int], found: list[K]) -> DependencyCycleError:
    """Every cycle (graphlib reports one at a time: take it out with what it blocks, ask again) and the blocked
    nodes."""
    dependents: dict[K, list[K]] = {node: [] for node in graph}
    for node, deps in graph.items():
        for dep in deps:
            if dep in dependents:
                dependents[dep].append(node)
    cycles: list[tuple[K, ...]] = []
    blocked: set[K] = set()
    while True:
        cycle = _in_dependency_order(found, order)
        cycles.append(cycle)
        frontier = [node for node in cycle if node not in blocked]
        blocked.update(frontier)
        while frontier:  # everything that depends, directly or not, on the cycle can never run either
            for dependent in dependents[frontier.pop()]:
                if dependent not in blocked:
                    blocked.add(dependent)
                    frontier.append(dependent)
        rest: TopologicalSorter[K] = TopologicalSorter()
        for node, deps in graph.items():
            if node not in blocked:
                rest.add(node, *(dep for dep in deps if dep in order))
        try:
            rest.prepare()
            break
        except CycleError as exc:
            found = exc.args[1]
    return DependencyCycleError(cycles[0], tuple(sorted(blocked, key=order.__getitem__)), tuple(cycles))


def _in_dependency_order(found: list[K], order: dict[K, int]) -> tuple[K, ...]:
    """graphlib lists a cycle as ``[a, b, ..., a]`` with each node a dependency of the next; return it with each
    node depending on the next, starting (and ending) at the node that comes first in the input."""
    nodes = found[-1:0:-1]  # reversed, without the repeated node
    start = min(range(len(nodes)), key=lambda i: order[nodes[i]])
    rotated = nodes[start:] + nodes[:start]
    return (*rotated, rotated[0])

"""Topological layers of a dependency graph, on the standard library's :class:`graphlib.TopologicalSorter`.

Pure: no I/O, no llamabot imports but the error type. One implementation for every DAG in llamabot: AoT plans
(atoms and their ``dependsOn``), ANoT's LWT scripts (steps and their ``{(id)}`` references). Each layer holds
the nodes whose dependencies are all in earlier layers, with at least one in the layer just before (graphlib's
``get_ready`` batches), so the nodes of a layer are independent of each other and may run concurrently.
graphlib walks the graph without recursion, so a plan of thousands of chained atoms is fine; the cycle report
is linear and iterative too.
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
    except CycleError:
        raise _cycle_error(graph, order, _orderable(sorter)) from None
    layers: list[list[K]] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=order.__getitem__)
        sorter.done(*ready)
        layers.append(ready)
    return layers


def _orderable(sorter: TopologicalSorter[K]) -> set[K]:
    """The nodes ``sorter`` can still order after it found a cycle (graphlib hands them out after a
    ``CycleError``); the others are in a cycle or depend on one."""
    done: set[K] = set()
    while ready := sorter.get_ready():
        sorter.done(*ready)
        done.update(ready)
    return done


def _cycle_error(graph: dict[K, tuple[K, ...]], order: dict[K, int], orderable: set[K]) -> DependencyCycleError:
    """Every cycle and the blocked nodes, in time linear in the graph's size (nodes plus edges), without
    recursion: the nodes graphlib cannot order are blocked; among them, each strongly connected component that
    holds a cycle (Kosaraju, iterative) gives one cycle through its node that comes first in the input (asking
    graphlib again after each cycle it reports was quadratic: 2,000 nodes in two-node cycles took 2 s)."""
    edges = {node: [dep for dep in deps if dep in order] for node, deps in graph.items()}
    dependents: dict[K, list[K]] = {node: [] for node in graph}
    for node, deps in edges.items():
        for dep in deps:
            dependents[dep].append(node)
    blocked = [node for node in graph if node not in orderable]  # input order
    inside = set(blocked)
    cycles = [
        _cycle_through(min(component, key=order.__getitem__), edges, set(component))
        for component in _components(blocked, edges, dependents, inside)
        if len(component) > 1 or component[0] in edges[component[0]]
    ]
    cycles.sort(key=lambda cycle: order[cycle[0]])
    return DependencyCycleError(cycles[0], tuple(blocked), tuple(cycles))


def _components(nodes: list[K], edges: dict[K, list[K]], reverse: dict[K, list[K]], inside: set[K]) -> list[list[K]]:
    """The strongly connected components of the subgraph on ``nodes`` (Kosaraju's two passes, iteratively)."""
    finished: list[K] = []
    seen: set[K] = set()
    for root in nodes:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(edges[root]))]
        while stack:
            node, successors = stack[-1]
            for successor in successors:
                if successor in inside and successor not in seen:
                    seen.add(successor)
                    stack.append((successor, iter(edges[successor])))
                    break
            else:
                stack.pop()
                finished.append(node)
    components: list[list[K]] = []
    assigned: set[K] = set()
    for root in reversed(finished):
        if root in assigned:
            continue
        assigned.add(root)
        component, frontier = [root], [root]
        while frontier:
            for predecessor in reverse[frontier.pop()]:
                if predecessor in inside and predecessor not in assigned:
                    assigned.add(predecessor)
                    component.append(predecessor)
                    frontier.append(predecessor)
        components.append(component)
    return components


def _cycle_through(start: K, edges: dict[K, list[K]], component: set[K]) -> tuple[K, ...]:
    """A shortest cycle from ``start`` back to itself inside its component, each node depending on the next
    (breadth-first along dependencies), ``start`` repeated at the end."""
    parent: dict[K, K] = {}
    frontier = [start]
    while frontier:
        following: list[K] = []
        for node in frontier:
            for dep in edges[node]:
                if dep == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return (start, *reversed(path[:-1]), start) if node != start else (start, start)
                if dep in component and dep not in parent:
                    parent[dep] = node
                    following.append(dep)
        frontier = following
    raise AssertionError("a strongly connected component with an edge always holds a cycle")  # pragma: no cover

"""A bot's graph drawn as SVG on the server, from the mermaid source ``GraphBot.to_mermaid`` writes.

mermaid.js (2.7 MB) is not bundled (the console works offline), so the page draws the flowchart itself: nodes in
columns by their distance from the start node, forward edges as curves to the right, edges back (a tool returning
to ``decide``) as dashed curves below, an edge to itself as a loop above. Only the shape llamabot writes is read
(``nX["label"]``, ``nX(["label"]):::terminal``, ``nA -->|"action"| nB``, ``class nX start``); anything else gives
``None`` and the page shows the source alone. Pure data: the template renders (and escapes) it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NODE = re.compile(r'^(n\d+)(?:\["(.*)"\]|\(\["(.*)"\]\):::terminal)$')
_EDGE = re.compile(r'^(n\d+) -->\|"(.*)"\| (n\d+)$')
_START = re.compile(r"^class (n\d+) start$")
_IGNORED = ("flowchart ", "classDef ")

BOX_H, ROW_GAP, COL_GAP, CHAR_W, MARGIN = 34, 26, 170, 7.5, 24


@dataclass(slots=True)
class GraphNode:
    key: str
    label: str
    terminal: bool
    x: float = 0.0
    y: float = 0.0
    width: float = 0.0
    start: bool = False


@dataclass(slots=True)
class GraphEdge:
    label: str
    path: str  # an SVG path
    label_x: float
    label_y: float
    back: bool
    anchor: str = "middle"  # the label's text-anchor


@dataclass(slots=True)
class GraphDrawing:
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    width: float
    height: float


def draw(source: str | None) -> GraphDrawing | None:
    """The drawing of a flowchart written by ``to_mermaid``; ``None`` for any other text."""
    if not source:
        return None
    nodes: dict[str, GraphNode] = {}
    links: list[tuple[str, str, str]] = []
    start = None
    for line in (raw.strip() for raw in source.splitlines()):
        if not line or line.startswith(_IGNORED):
            continue
        if found := _NODE.match(line):
            key, plain, terminal = found.groups()
            nodes[key] = GraphNode(key, _unescape(plain if plain is not None else terminal), terminal is not None)
        elif found := _EDGE.match(line):
            links.append((found[1], _unescape(found[2]), found[3]))
        elif found := _START.match(line):
            start = found[1]
        else:
            return None
    if start not in nodes or any(a not in nodes or b not in nodes for a, _, b in links):
        return None
    nodes[start].start = True
    columns = _columns(start, nodes, links)
    for column, keys in enumerate(columns):
        x = MARGIN + sum(max(nodes[k].width for k in c) + COL_GAP for c in columns[:column])
        for row, key in enumerate(keys):
            node = nodes[key]
            node.x, node.y = x, MARGIN + 30 + row * (BOX_H + ROW_GAP)
    width = max(n.x + n.width for n in nodes.values()) + MARGIN
    height = max(n.y for n in nodes.values()) + BOX_H + MARGIN + 40
    return GraphDrawing(list(nodes.values()), [_edge(nodes[a], nodes[b], label) for a, label, b in links],
                        width, height)


def _columns(start: str, nodes: dict[str, GraphNode], links: list[tuple[str, str, str]]) -> list[list[str]]:
    """Nodes by their distance (in edges) from ``start``; nodes it does not reach go last."""
    for node in nodes.values():
        node.width = max(80.0, len(node.label) * CHAR_W + 24)
    distance = {start: 0}
    frontier = [start]
    while frontier:
        following = []
        for key in frontier:
            for a, _, b in links:
                if a == key and b not in distance:
                    distance[b] = distance[key] + 1
                    following.append(b)
        frontier = following
    last = max(distance.values()) + 1
    columns: list[list[str]] = [[] for _ in range(last + 1)]
    for key in nodes:
        columns[distance.get(key, last)].append(key)
    return [c for c in columns if c]


def _edge(a: GraphNode, b: GraphNode, label: str) -> GraphEdge:
    if a is b:  # a loop above the node
        x, y = a.x + a.width / 2, a.y
        return GraphEdge(label, f"M{x - 14:.0f},{y:.0f} C{x - 30:.0f},{y - 34:.0f} {x + 30:.0f},{y - 34:.0f} "
                                f"{x + 14:.0f},{y:.0f}", x, y - 30, False)
    if b.x > a.x:  # forward: right side to left side
        x1, y1, x2, y2 = a.x + a.width, a.y + BOX_H / 2, b.x, b.y + BOX_H / 2
        middle = (x1 + x2) / 2
        return GraphEdge(label, f"M{x1:.0f},{y1:.0f} C{middle:.0f},{y1:.0f} {middle:.0f},{y2:.0f} {x2:.0f},{y2:.0f}",
                         x2 - 8, y2 - 6, False, "end")  # just before the arrow: each target has its own row
    # back (or within a column): bottom to bottom, dipping below both
    x1, y1, x2, y2 = a.x + a.width / 2, a.y + BOX_H, b.x + b.width / 2, b.y + BOX_H
    dip = max(y1, y2) + 30
    return GraphEdge(label, f"M{x1:.0f},{y1:.0f} C{x1:.0f},{dip:.0f} {x2:.0f},{dip:.0f} {x2:.0f},{y2:.0f}",
                     x1 + 6, y1 + 13, True, "start")  # under its source: each source has its own row


_NAMED = {"amp": "&", "quot": '"', "lt": "<", "gt": ">"}


def _unescape(text: str) -> str:
    """Mermaid's entities (``#quot;``, ``#91;``) as the characters they stand for."""
    return re.sub(r"#(\d+|amp|quot|lt|gt);", lambda m: chr(int(m[1])) if m[1].isdigit() else _NAMED[m[1]], text)

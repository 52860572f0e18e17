"""Render any pocketflow graph as a mermaid flowchart. Pure: walks ``successors`` from the start node."""

from __future__ import annotations

from typing import Any

from llamabot.graph.flow import node_label


def walk(start: Any) -> list[Any]:
    """Every node reachable from ``start`` (breadth first), each once."""
    seen: dict[int, Any] = {}
    stack = [start]
    while stack:
        node = stack.pop(0)
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(node.successors.values())
    return list(seen.values())


_ENTITIES = (("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("[", "#91;"), ("]", "#93;"),
             ("{", "#123;"), ("}", "#125;"), ("|", "#124;"))


def escape_label(text: object, limit: int | None = None) -> str:
    """``text`` as a mermaid label: whitespace collapsed to single spaces, shortened to ``limit`` characters
    (ending in "…"), and every character mermaid would read as syntax written as an entity. The one escape every
    diagram of the project uses (graphs, AoT plans, ToT trees, LWT scripts)."""
    text = " ".join(str(text).split())
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    for raw, code in _ENTITIES:
        text = text.replace(raw, code)
    return text


def to_mermaid(flow: Any, direction: str = "LR") -> str:
    """A mermaid ``flowchart`` of ``flow`` (a pocketflow ``Flow``, or a start node).

    Nodes are labelled with their ``name`` (else class name); edges with their action. Nodes whose
    ``terminal`` attribute is true (terminal tools) are drawn as stadiums and styled ``terminal``; the start
    node is styled ``start``. A sub-flow used as a node is drawn as one node.
    """
    start = getattr(flow, "start_node", flow)
    nodes = walk(start)
    ids = {id(node): f"n{index}" for index, node in enumerate(nodes)}
    lines = [f"flowchart {direction}"]
    for node in nodes:
        label = escape_label(node_label(node))
        if getattr(node, "terminal", False):
            lines.append(f'    {ids[id(node)]}(["{label}"]):::terminal')
        else:
            lines.append(f'    {ids[id(node)]}["{label}"]')
    for node in nodes:
        for action, target in node.successors.items():
            lines.append(f'    {ids[id(node)]} -->|"{escape_label(action)}"| {ids[id(target)]}')
    lines.append(f"    class {ids[id(start)]} start")
    lines.append("    classDef terminal fill:#e8f5e9,stroke:#2e7d32,stroke-width:2px")
    lines.append("    classDef start fill:#e3f2fd,stroke:#1565c0,stroke-width:2px")
    return "\n".join(lines)


class MermaidDiagram:
    """A mermaid source that notebooks display as a diagram (Jupyter renders mermaid in markdown)."""

    def __init__(self, source: str):
        self.source = source

    def __str__(self) -> str:
        return self.source

    def _repr_markdown_(self) -> str:
        return f"```mermaid\n{self.source}\n```"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/markdown": self._repr_markdown_(), "text/plain": self.source}

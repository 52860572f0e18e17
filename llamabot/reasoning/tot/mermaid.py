"""The explored thought tree as a mermaid flowchart. Pure.

Each node shows its thought (shortened) and score; the root shows the problem. The solution path's nodes are
styled ``solution`` and its edges drawn thick and green; closed branches (thoughts that could not be read)
are dashed; nodes still on the frontier are styled ``frontier``.
"""

from __future__ import annotations

from llamabot.graph.mermaid import MermaidDiagram, escape_label
from llamabot.reasoning.tot.machine import ToTMachine


def tree_to_mermaid(machine: ToTMachine, direction: str = "TD", max_label: int = 60) -> MermaidDiagram:
    """A mermaid ``flowchart`` of ``machine``'s tree (``str()`` gives the source; notebooks draw it)."""
    ids = {node_id: f"n{index}" for index, node_id in enumerate(machine.nodes)}
    on_path = set(machine.solution_path)
    lines = [f"flowchart {direction}"]
    for node in machine.nodes.values():
        if node.parent_id is None:
            lines.append(f'    {ids[node.id]}["{escape_label(node.content, max_label)}"]')
            continue
        score = "?" if node.score is None else f"{node.score:.2f}"
        lines.append(f'    {ids[node.id]}["{escape_label(node.content, max_label)}<br/>score {score}"]')
    solution_edges = []
    edge_index = 0
    for node in machine.nodes.values():
        for child in node.children:
            if child not in ids:
                continue
            lines.append(f"    {ids[node.id]} --> {ids[child]}")
            if node.id in on_path and child in on_path:
                solution_edges.append(str(edge_index))
            edge_index += 1
    lines.append("    classDef solution fill:#e8f5e9,stroke:#2e7d32,stroke-width:3px")
    lines.append("    classDef closed fill:#fafafa,stroke:#9e9e9e,stroke-dasharray:4 3")
    lines.append("    classDef frontier fill:#fff8e1,stroke:#f9a825")
    for style, members in (
        ("frontier", [n for n in machine.frontier if n in ids and n not in on_path]),
        ("closed", [n for n in machine.closed_nodes if n in ids and n not in on_path]),
        ("solution", [n for n in machine.nodes if n in on_path]),
    ):
        if members:
            lines.append(f"    class {','.join(ids[n] for n in members)} {style}")
    if solution_edges:
        lines.append(f"    linkStyle {','.join(solution_edges)} stroke:#2e7d32,stroke-width:3px")
    return MermaidDiagram("\n".join(lines))

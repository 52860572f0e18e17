"""The atom graph of a plan as mermaid, optionally coloured by an execution record. Pure."""

from __future__ import annotations

from typing import Any

from llamabot.graph.mermaid import escape_label
from llamabot.reasoning.aot.plan import Plan

_STYLES = {
    "ok": "fill:#e8f5e9,stroke:#2e7d32",
    "failed": "fill:#ffebee,stroke:#c62828",
    "compensated": "fill:#fff8e1,stroke:#f9a825",
    "not_run": "fill:#eeeeee,stroke:#9e9e9e",
}


def _label(text: Any) -> str:
    return escape_label(text, 60)


def plan_to_mermaid(plan: Plan, record: Any = None, direction: str = "TD") -> str:
    """Atoms as nodes (``id: kind name``, with the result when ``record`` is given), dependencies as edges."""
    lines = [f"flowchart {direction}"]
    for atom in plan.atoms:
        text = f"{atom.id}: {atom.name}" if atom.kind != "final" else f"{atom.id}: final"
        if record is not None and atom.id in record.atoms:
            state = record.atoms[atom.id]
            if state.status in ("ok", "compensated"):
                text += f" = {state.result!r}"
            elif state.status == "failed":
                text += f" ✗ {state.error}"
        shape = f'(["{_label(text)}"])' if atom.kind == "final" else f'{{"{_label(text)}"}}' if atom.kind == "decision" else f'["{_label(text)}"]'
        lines.append(f"    a{atom.id}{shape}")
    for atom in plan.atoms:
        for dep in atom.depends_on:
            lines.append(f"    a{dep} --> a{atom.id}")
    if record is not None:
        for status, style in _STYLES.items():
            lines.append(f"    classDef {status} {style}")
        for atom in plan.atoms:
            if atom.id in record.atoms:
                lines.append(f"    class a{atom.id} {record.atoms[atom.id].status}")
    return "\n".join(lines)

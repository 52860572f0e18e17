"""The LWT dependency DAG as a mermaid flowchart. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from llamabot.reasoning.anot.lwt import LWTStep, final_step


def _label(step: LWTStep, width: int) -> str:
    prompt = " ".join(step.prompt.split())
    short = prompt if len(prompt) <= width else prompt[: width - 3] + "..."
    return f"({step.id}) {short}".replace('"', "#quot;").replace("[", "#91;").replace("]", "#93;")


def lwt_mermaid(steps: Sequence[LWTStep], direction: str = "TD", label_width: int = 48) -> str:
    """A ``flowchart`` with one node per step (labelled with its id and the start of its prompt) and an edge
    from every referenced step to the step that uses its output; the final step is styled ``final``."""
    lines = [f"flowchart {direction}"]
    ids = {step.id: f"s{index}" for index, step in enumerate(steps)}
    for step in steps:
        lines.append(f'    {ids[step.id]}["{_label(step, label_width)}"]')
    for step in steps:
        for ref in step.references:
            if ref in ids:
                lines.append(f"    {ids[ref]} --> {ids[step.id]}")
    if steps:
        lines.append(f"    class {ids[final_step(steps).id]} final")
        lines.append("    classDef final fill:#e8f5e9,stroke:#2e7d32,stroke-width:2px")
    return "\n".join(lines)

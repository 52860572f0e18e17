"""Plan validation: pure, no LLM. Every error found is reported, each naming its atom.

Rules (docs/design/aot/aot-EARS.md): unique ids; known tools and decisions; dependencies on existing atoms;
no cycles; ``<result_of_N>`` only to existing, earlier atoms; inputs that match the tool's argument schema;
exactly one ``final``, which reports something. A reference missing from ``dependsOn`` is added (a note,
not an error).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from llamabot.errors import DependencyCycleError, LlamabotError
from llamabot.graph.layers import topological_layers
from llamabot.reasoning.aot.plan import Atom, Plan, references
from llamabot.tools.tool import Tool


@dataclass(frozen=True, slots=True)
class PlanIssue:
    """One problem in a plan. ``atom`` is the atom id (None for plan-wide problems)."""

    atom: int | None
    code: str
    message: str

    def __str__(self) -> str:
        where = f"atom {self.atom}" if self.atom is not None else "plan"
        return f"{where}: {self.message}"


class PlanValidationError(LlamabotError, ValueError):
    """The plan is invalid. ``plan`` is what was checked, ``errors`` every problem found."""

    def __init__(self, plan: Plan | None, errors: list[PlanIssue], raw: str | None = None):
        self.plan, self.errors, self.raw = plan, errors, raw
        super().__init__("invalid plan: " + "; ".join(str(e) for e in errors))


@lru_cache(maxsize=512)
def _adapter(annotation: Any) -> TypeAdapter:
    return TypeAdapter(annotation)


def _check_inputs(atom: Atom, tool: Tool) -> list[PlanIssue]:
    issues = []
    fields = tool.arguments.model_fields
    for key, value in atom.input.items():
        if key not in fields:
            expected = ", ".join(fields) or "no inputs"
            issues.append(PlanIssue(atom.id, "unknown_input", f"{tool.name} has no input {key!r} (expected: {expected})"))
        elif not references(value):  # references are checked at run time, once their values exist
            try:
                _adapter(fields[key].annotation).validate_python(value)
            except ValidationError as exc:
                reason = exc.errors(include_url=False)[0]["msg"]
                issues.append(PlanIssue(atom.id, "bad_input", f"{tool.name} input {key!r}={value!r}: {reason}"))
            except TypeError:  # an annotation pydantic cannot adapt on its own: leave it to run time
                pass
    for key, field in fields.items():
        if field.is_required() and key not in atom.input:
            issues.append(PlanIssue(atom.id, "missing_input", f"{tool.name} needs input {key!r}"))
    return issues


def _cycles(atoms: list[Atom]) -> list[list[int]]:
    """The dependency cycles among ``atoms`` (a self-loop included), each as its sorted atom ids. Iterative
    (graphlib), so a long chain of atoms cannot overflow the stack."""
    try:
        topological_layers({a.id: a.depends_on for a in atoms})
    except DependencyCycleError as exc:
        return [sorted(set(cycle)) for cycle in exc.cycles]
    return []


def validate_plan(plan: Plan, tools: dict[str, Tool], decisions: dict[str, Tool] | None = None) -> tuple[Plan, list[str]]:
    """Check ``plan``; return the normalised plan (references added to ``dependsOn``) and notes.

    Raises :class:`PlanValidationError` with every problem found.
    """
    decisions = decisions or {}
    issues: list[PlanIssue] = []
    notes: list[str] = []
    position: dict[int, int] = {}
    for index, atom in enumerate(plan.atoms):
        if atom.id in position:
            issues.append(PlanIssue(atom.id, "duplicate_id", f"id {atom.id} is used by more than one atom"))
        else:
            position[atom.id] = index

    normalised: list[Atom] = []
    for index, atom in enumerate(plan.atoms):
        depends = list(dict.fromkeys(atom.depends_on))
        if atom.kind == "tool" and atom.name not in tools:
            hint = " (it is a decision: use kind 'decision')" if atom.name in decisions else ""
            issues.append(PlanIssue(atom.id, "unknown_tool", f"unknown tool {atom.name!r}{hint}; tools: {', '.join(tools) or 'none'}"))
        elif atom.kind == "decision" and atom.name not in decisions:
            hint = " (it is a tool: use kind 'tool')" if atom.name in tools else ""
            issues.append(PlanIssue(atom.id, "unknown_decision", f"unknown decision {atom.name!r}{hint}; decisions: {', '.join(decisions) or 'none'}"))
        for dep in depends:
            if dep not in position:
                issues.append(PlanIssue(atom.id, "missing_dependency", f"depends on missing atom {dep}"))
        for ref in dict.fromkeys(references(atom.input)):
            if ref not in position:
                issues.append(PlanIssue(atom.id, "missing_reference", f"refers to <result_of_{ref}>, but there is no atom {ref}"))
            elif position[ref] >= index:
                issues.append(PlanIssue(atom.id, "forward_reference", f"refers to <result_of_{ref}>, which is not an earlier atom"))
            elif ref not in depends:
                depends.append(ref)
                notes.append(f"atom {atom.id}: added {ref} to dependsOn (it uses <result_of_{ref}>)")
        tool = tools.get(atom.name) if atom.kind == "tool" else decisions.get(atom.name) if atom.kind == "decision" else None
        if tool is not None:
            issues.extend(_check_inputs(atom, tool))
        normalised.append(atom.model_copy(update={"depends_on": depends}))

    finals = [a for a in normalised if a.kind == "final"]
    if len(finals) != 1:
        ids = ", ".join(str(a.id) for a in finals) or "none"
        issues.append(PlanIssue(None, "final_count", f"a plan needs exactly one final atom (found: {ids})"))
    for final in finals:
        if not final.depends_on and not references(final.input):
            issues.append(PlanIssue(final.id, "empty_final", "the final atom reports nothing: give it dependsOn or input references"))
        users = [a.id for a in normalised if final.id in a.depends_on]
        if users:
            issues.append(PlanIssue(final.id, "final_not_last", f"atoms {users} depend on the final atom"))
    for group in _cycles(normalised):
        issues.append(PlanIssue(group[0], "cycle", f"dependency cycle between atoms {group}"))

    if issues:
        raise PlanValidationError(plan, issues)
    return Plan(atoms=normalised), notes

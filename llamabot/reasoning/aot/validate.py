"""Plan validation: pure, no LLM. Every error found is reported, each naming its atom.

Rules (docs/design/aot/aot-EARS.md): at most :data:`MAX_ATOMS` atoms (the schema's limit); unique ids; known
tools and decisions; dependencies on existing atoms; no cycles; ``<result_of_N>`` only to existing, earlier
atoms; inputs nested at most :data:`MAX_INPUT_DEPTH` deep that match the tool's argument schema; exactly one
``final``, which reports something. A reference missing from ``dependsOn`` is added, and so is a final atom
reporting the one atom nothing depends on when a plan has no final (notes, not errors).

Total and linear in the plan's size, whatever the model wrote: every problem is a :class:`PlanIssue` in a
:class:`PlanValidationError` (so the bot re-plans), never a ``RecursionError`` or a bare ``ValueError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from llamabot.errors import DependencyCycleError, LlamabotError, excerpt
from llamabot.graph.layers import topological_layers
from llamabot.reasoning.aot.literals import computed_literals
from llamabot.reasoning.aot.plan import MAX_REFERENCE_DIGITS, Atom, Plan, reference_texts, references
from llamabot.reasoning.aot.schema import FINAL_NAME, MAX_ATOMS, MAX_INPUT_DEPTH
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
        elif not reference_texts(value)[0]:  # references are checked at run time, once their values exist
            try:
                _adapter(fields[key].annotation).validate_python(value)
            except ValidationError as exc:
                reason = exc.errors(include_url=False)[0]["msg"]
                issues.append(PlanIssue(atom.id, "bad_input", f"{tool.name} input {key!r}={excerpt(value)}: {reason}"))
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


def _implied_final(atoms: list[Atom], notes: list[str]) -> list[Atom]:
    """A plan that forgot its final atom but has exactly one atom nothing depends on reports that atom: a final
    atom is appended to ``atoms`` (a note says so). Otherwise nothing is added (``final_count`` follows)."""
    used = {dep for atom in atoms for dep in atom.depends_on}
    sinks = [atom for atom in atoms if atom.id not in used]
    if len(sinks) != 1:
        return []
    final = Atom(id=max(atom.id for atom in atoms) + 1, kind="final", name=FINAL_NAME, dependsOn=[sinks[0].id])
    atoms.append(final)
    notes.append(f"added final atom {final.id} reporting atom {sinks[0].id} (the plan had no final atom)")
    return [final]


def validate_plan(plan: Plan, tools: dict[str, Tool], decisions: dict[str, Tool] | None = None, *,
                  max_atoms: int | None = MAX_ATOMS, literals: frozenset[float | str] | None = None,
                  ) -> tuple[Plan, list[str]]:
    """Check ``plan``; return the normalised plan (references added to ``dependsOn``) and notes.

    ``literals``: the numbers the atoms' inputs may write (:func:`~llamabot.reasoning.aot.literals.question_numbers`,
    for arithmetic plans); any other is a ``computed_literal`` issue. ``None``: not checked.

    ``max_atoms``: the most atoms allowed (default the schema's :data:`MAX_ATOMS`; ``None``: no limit, for
    plans written by hand). A plan over it is rejected with that one issue, and nothing else is checked.
    Raises :class:`PlanValidationError` with every problem found.
    """
    decisions = decisions or {}
    if max_atoms is not None and len(plan.atoms) > max_atoms:
        raise PlanValidationError(plan, [PlanIssue(None, "too_many_atoms", f"the plan has {len(plan.atoms)} atoms; "
                                                   f"at most {max_atoms} are allowed: combine or drop steps")])
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
        texts, depth = reference_texts(atom.input)
        if depth > MAX_INPUT_DEPTH:
            issues.append(PlanIssue(atom.id, "input_too_deep", f"the input nests {depth} levels deep; at most "
                                    f"{MAX_INPUT_DEPTH} are allowed"))
        for text in dict.fromkeys(t for t in texts if len(t) > MAX_REFERENCE_DIGITS):
            issues.append(PlanIssue(atom.id, "bad_reference", f"refers to <result_of_{excerpt(text, 20)}>, an id of "
                                    f"{len(text)} digits, which names no atom"))
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
    if not finals:
        finals = _implied_final(normalised, notes)
    if len(finals) != 1:
        ids = ", ".join(str(a.id) for a in finals) or "none"
        issues.append(PlanIssue(None, "final_count", f"a plan needs exactly one final atom (found: {ids})"))
    depended_on: dict[int, list[int]] = {}
    for atom in normalised:
        for dep in atom.depends_on:
            depended_on.setdefault(dep, []).append(atom.id)
    for final in finals:
        if not final.depends_on and not references(final.input):
            issues.append(PlanIssue(final.id, "empty_final", "the final atom reports nothing: give it dependsOn or input references"))
        users = depended_on.get(final.id, [])
        if users:
            issues.append(PlanIssue(final.id, "final_not_last", f"atoms {users} depend on the final atom"))
    for group in _cycles(normalised):
        issues.append(PlanIssue(group[0], "cycle", f"dependency cycle between atoms {group}"))
    if literals is not None:
        issues.extend(PlanIssue(atom, "computed_literal", message) for atom, message in computed_literals(plan, literals))

    if issues:
        raise PlanValidationError(plan, issues)
    return Plan(reasoning=plan.reasoning, atoms=normalised), notes

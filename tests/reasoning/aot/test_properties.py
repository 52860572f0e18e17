"""Property: any valid DAG plan built from an expression executes to the expression's value (sync and async)."""

from __future__ import annotations

import asyncio
import operator

from hypothesis import given, settings
from hypothesis import strategies as st

from llamabot.reasoning.aot import Plan, aexecute_plan, execute_plan, execution_layers, validate_plan
from llamabot.toolkits.calculator import CALCULATOR_TOOLS

TOOLS = {t.tool.name: t.tool for t in CALCULATOR_TOOLS}
OPS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul}

leaves = st.integers(min_value=-20, max_value=20)
expressions = st.recursive(
    leaves,
    lambda children: st.tuples(st.sampled_from(sorted(OPS)), children, children),
    max_leaves=12,
)


def evaluate(expr) -> int:
    if isinstance(expr, int):
        return expr
    op, left, right = expr
    return OPS[op](evaluate(left), evaluate(right))


def to_plan(expr) -> dict:
    """Post-order atoms: operands that are sub-expressions become references to earlier atoms."""
    atoms: list[dict] = []

    def emit(node) -> int | str:
        if isinstance(node, int):
            return node
        op, left, right = node
        a, b = emit(left), emit(right)
        atom_id = len(atoms) + 1
        inputs = {k: (f"<result_of_{v}>" if isinstance(v, str) else v) for k, v in (("a", a), ("b", b))}
        atoms.append({"id": atom_id, "kind": "tool", "name": op, "input": inputs})
        return str(atom_id)

    root = emit(expr)
    if not atoms:  # a bare number: one atom adding zero
        atoms.append({"id": 1, "kind": "tool", "name": "add", "input": {"a": root, "b": 0}})
        root = "1"
    atoms.append({"id": len(atoms) + 1, "kind": "final", "name": "report", "dependsOn": [int(root)]})
    return {"atoms": atoms}


@settings(max_examples=150, deadline=None)
@given(expressions)
def test_aot_prop_010_random_dag_plans_execute_to_the_direct_evaluation(expr):
    plan, _ = validate_plan(Plan.model_validate(to_plan(expr)), TOOLS)
    expected = evaluate(expr)
    assert execute_plan(plan, TOOLS).answer == expected
    assert asyncio.run(aexecute_plan(plan, TOOLS, sync_tools_in_threads=False)).answer == expected
    seen: set[int] = set()
    for layer in execution_layers(plan):  # every atom runs after all it depends on
        assert all(dep in seen for atom in layer for dep in atom.depends_on)
        seen.update(atom.id for atom in layer)

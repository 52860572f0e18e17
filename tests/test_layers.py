"""The package's layers import only downward (HLD: the layer diagram). Read from the source, not imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "llamabot"

#: Package -> layer. A module may import its own package and packages of LOWER layers only; packages that
#: share a layer (the three reasoning patterns) never import each other. Tools sit on the models layer: a tool
#: call is driven by the same exchange drivers as a model call.
LAYERS = {
    "errors": 0, "lazy": 0, "cores": 0,
    "settings": 1,  # reading LLAMABOT_* variables: errors only
    "observe": 1,
    "models": 2,
    "graph": 2,  # the engine: flows, nodes' dual runner, codec, checkpoints, mermaid; it never imports models
    "tools": 3,
    "toolkits": 4,
    "bot": 5,
    "agents": 7,  # graph bots: GraphBot, the agent's nodes, decisions, state, approvals, AgentBot
    "reasoning": 8, "reasoning.aot": 8, "reasoning.anot": 8, "reasoning.tot": 8,
    "durable": 9,
    "evals": 9,  # datasets, scorers, harnesses, baselines, provenance: above every bot, below the CLI
    "console": 10,  # the run console: pages over durable runs
    "cli": 11,
}


def package_of(module: str) -> str | None:
    """``llamabot.reasoning.aot.plan`` -> ``reasoning.aot``; ``llamabot.graph.flow`` -> ``graph``."""
    parts = module.split(".")[1:]
    if not parts:
        return None  # the top-level ``llamabot`` package (lazy public names) sits above every layer
    if parts[0] == "reasoning" and len(parts) > 1:
        return f"reasoning.{parts[1]}"
    return parts[0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, imported names) for every ``llamabot`` import in the file, lazy ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("llamabot"):
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("llamabot")]
    return found


SOURCES = sorted(p for p in ROOT.rglob("*.py") if p != ROOT / "__init__.py")


def test_agt_layer_010_every_package_has_a_layer():
    packages = {package_of(module_name(p)) for p in SOURCES}
    assert packages <= set(LAYERS), f"packages without a layer: {packages - set(LAYERS)}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_agt_layer_020_modules_import_only_their_own_package_and_lower_layers(path):
    here = package_of(module_name(path))
    for line, module, _ in imports(path):
        there = package_of(module)
        if there is None or there == here:
            continue
        assert LAYERS[there] < LAYERS[here], (
            f"{path.relative_to(ROOT)}:{line} imports {module} (layer {LAYERS[there]}) from layer {LAYERS[here]}"
        )


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_agt_layer_030_no_private_names_are_imported_across_packages(path):
    here = package_of(module_name(path))
    for line, module, names in imports(path):
        if package_of(module) == here:
            continue
        private = [n for n in names if n.startswith("_") and not (n.startswith("__") and n.endswith("__"))]
        assert not private, f"{path.relative_to(ROOT)}:{line} imports private {private} from {module}"


def test_agt_layer_050_the_graph_engine_imports_no_models_tools_bots_or_agents():
    for path in sorted((ROOT / "graph").glob("*.py")):
        for line, module, _ in imports(path):
            assert package_of(module) in {"graph", "errors", "lazy", "observe"}, (
                f"{path.relative_to(ROOT)}:{line} imports {module}: the engine knows nothing of what runs on it")


def runtime_imports(path: Path) -> set[str]:
    """The llamabot modules ``path`` imports when it runs (``if TYPE_CHECKING:`` blocks left out), imports inside
    functions included: a circle held together by imports inside functions is still a circle."""
    tree = ast.parse(path.read_text())
    skipped = {id(sub) for node in ast.walk(tree)
               if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING" for sub in ast.walk(node)}
    known = {module_name(p) for p in SOURCES}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("llamabot"):
            found.update(t for t in (node.module, *(f"{node.module}.{a.name}" for a in node.names)) if t in known)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
    here = module_name(path)
    return {m for m in found if m != here and not here.startswith(m + ".")}  # a package's own __init__ is not a circle


def test_agt_layer_060_no_module_imports_itself_through_others():
    edges = {module_name(p): runtime_imports(p) for p in SOURCES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (circle := visit(target)) is not None:
                return circle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(edges):
        if module not in state:
            circle = visit(module)
            assert circle is None, "import circle: " + " -> ".join(circle)


#: The most lines a module of the package may have (issue #35: small files named after their concept).
MAX_LINES = 450


def test_agt_layer_070_no_module_is_over_the_line_limit():
    long = {module_name(p): n for p in SOURCES if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by concept): {long}"

"""The layers of ARCHITECTURE.md, checked: data flows one way.

Every ``import`` of hfuse's own modules is read from the source (also the ones inside
functions), and the resulting graph must have no circle; a layer may import only the
layers below it; and no module grows past 600 lines.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "hfuse"

LAYERS: tuple[tuple[str, ...], ...] = (
    # lowest first; a module may import its own layer and the ones before it
    ("hfuse.version", "hfuse.errors", "hfuse.internal_errors", "hfuse.files", "hfuse.toolkit", "hfuse.frontend.options", "hfuse.spec",
     "hfuse.launch", "hfuse.registers"),
    ("hfuse.frontend",),
    ("hfuse.partition", "hfuse.transform"),
    ("hfuse.codegen",),
    ("hfuse.layouts",),
    ("hfuse.fusion",),
    ("hfuse.part_facts", "hfuse.header_meaning"),
    ("hfuse.api", "hfuse.config"),
    ("hfuse.runtime",),
    ("hfuse.testing",),
    ("hfuse.tuning",),
    ("hfuse.torch", "hfuse.bench"),
    ("hfuse.batch",),
    ("hfuse.cli",),
    ("hfuse",),  # the package's facade imports anything (lazily where it is heavy)
)


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("hfuse"):
                module = node.module
            else:
                continue
            targets = [f"{module}.{a.name}" for a in node.names] + [module]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith("hfuse")]
        for target in targets:
            while target not in MODULES and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in MODULES and target != name:
                found.add(target)
                break
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(module: str) -> int:
    best = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    assert best is not None, f"{module} is in no layer of ARCHITECTURE.md"
    return best[0]


def test_no_import_circle():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_run_down_the_layers(module):
    upward = sorted(t for t in GRAPH[module] if _layer(t) > _layer(module))
    assert not upward, f"{module} (layer {_layer(module)}) imports a layer above it: {upward}"


def test_no_module_over_600_lines():
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text().splitlines())) > 600}
    assert not long, long

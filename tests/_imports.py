"""The import graph of a package, read from its source: every ``import`` statement counts,
including those inside functions and under ``TYPE_CHECKING`` (they only hide a cycle)."""

from __future__ import annotations

import ast
from pathlib import Path


def package_modules(package: Path) -> dict[str, Path]:
    """Every module of the package at ``package`` by dotted name (data directories that are not
    packages, such as eval workspaces, are not modules)."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        dirs = path.relative_to(package).parents
        if not all((package / d / "__init__.py").exists() for d in dirs):
            continue
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def module_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of ``modules`` that ``name`` imports, wherever the import statement is."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base in modules:
                out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules)
    # importing a submodule runs its package's __init__ first: that edge is not a cycle
    out.discard(name)
    return {m for m in out if not name.startswith(f"{m}.")}


def import_graph(package: Path) -> dict[str, set[str]]:
    modules = package_modules(package)
    return {name: module_imports(name, path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that ends where it starts, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (found := visit(dep)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None

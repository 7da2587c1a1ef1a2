"""The library's modules import each other in one direction: no cycle, not even one held apart
by an import inside a function or under ``TYPE_CHECKING`` (the layers contract in
pyproject.toml sees packages, not the modules inside one)."""

from __future__ import annotations

from pathlib import Path

import driveros
from tests._imports import find_cycle, import_graph, module_imports, package_modules

PACKAGE = Path(driveros.__file__).parent


def test_core_import_graph_has_no_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 150  # the walk found the library
    assert "driveros.evals.suites" not in " ".join(graph)  # eval workspaces are data
    assert "driveros.config" in graph["driveros.runs._options"]  # and reads the imports
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_core_import_graph_counts_imports_inside_functions(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def later():\n    from pkg.a import x\n")
    modules = package_modules(package)
    assert module_imports("pkg.b", modules["pkg.b"], modules) == {"pkg.a"}
    assert find_cycle(import_graph(package)) == ["pkg.a", "pkg.b", "pkg.a"]


def test_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None

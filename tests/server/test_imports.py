"""The server's modules import each other in one direction: no cycle, not even one held apart
by an import inside a function or under ``TYPE_CHECKING``; and each module imports on its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import driveros_lsp
from tests._imports import find_cycle, import_graph, package_modules

PACKAGE = Path(driveros_lsp.__file__).parent


def _modules() -> dict[str, Path]:
    return package_modules(PACKAGE)


def python_output(script: str) -> str:
    """What ``script`` prints, run by a fresh interpreter (which must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_import_graph_has_no_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 20  # the walk found the package
    assert "driveros_lsp._runs" in graph["driveros_lsp._hub"]  # and reads the imports
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_each_module_imports_fresh_on_its_own() -> None:
    names = sorted(n for n in _modules() if not n.endswith("__main__"))
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    for loaded in [m for m in sys.modules if m.split('.')[0] == 'driveros_lsp']:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
        "print('ok')\n"
    )
    assert python_output(script) == "ok"

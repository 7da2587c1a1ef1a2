"""The sandbox's one-file copy of the warm pytest process (``w.py``): made of the wire module and
the server module, standard library only, and it runs as they do."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from driveros.intel import _warm_server, _warm_wire
from driveros.intel._warm import server_code


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_warm_code_is_one_standard_library_file() -> None:
    tree = ast.parse(server_code().decode("utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    # the standard library, and the project's own pytest (the one it serves), nothing else
    assert imported - set(sys.stdlib_module_names) == {"pytest", "_pytest"}
    futures = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    assert len(futures) == 1 and tree.body.index(futures[0]) == 1  # after the docstring
    assert {"client", "serve", "main", "Server", "Request", "UNAVAILABLE"} <= _top_level_names(tree)


def test_warm_code_parts_define_distinct_names() -> None:
    # one namespace in the sandbox: the server must not shadow a name of the wire
    wire, server = (
        _top_level_names(ast.parse(Path(m.__file__ or "").read_text("utf-8")))
        for m in (_warm_wire, _warm_server)
    )
    assert wire & server == set()


def test_warm_code_runs_as_a_script(tmp_path: Path) -> None:
    script = tmp_path / "w.py"
    script.write_bytes(server_code())
    usage = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, check=False
    )
    assert (usage.returncode, usage.stdout.split(":")[0]) == (2, "usage")
    # no server listening: the client says it cannot serve, having written nothing
    nobody = tmp_path / "nobody"
    nobody.mkdir()
    cold = subprocess.run(
        [sys.executable, "-I", "-S", str(script), "client", str(nobody), "pytest", "-q"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert (cold.returncode, cold.stdout, cold.stderr) == (_warm_wire.UNAVAILABLE, b"", b"")

"""The shape rules of the code: no function or method in the library or the server takes more
than 8 parameters (``self``/``cls`` aside; bundle them in a parameter object) and no module is
over 500 lines (split it along its concepts).

The lists below are the debt that is left: each entry must go, none may be added, and a test
fails when an entry is fixed but still listed (so the lists stay exact)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

ROOTS = (REPO_ROOT / "core" / "driveros", REPO_ROOT / "server" / "driveros_lsp")
MAX_PARAMETERS = 8
MAX_LINES = 500

#: Functions over MAX_PARAMETERS today: ``path::qualified name``.
TOO_MANY_PARAMETERS: set[str] = set()
#: Modules over MAX_LINES today.
TOO_LONG: set[str] = set()


def _modules() -> list[Path]:
    found = []
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            # data directories (eval workspaces) are not packages
            if all((d / "__init__.py").exists() for d in path.parents if d.is_relative_to(root)):
                found.append(path)
    assert len(found) > 200  # the walk found the code
    return found


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.arguments]]:
    out: list[tuple[str, ast.arguments]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            out += _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append((f"{prefix}{node.name}", node.args))
            out += _functions(node, f"{prefix}{node.name}.")
        else:
            out += _functions(node, prefix)
    return out


def parameter_count(args: ast.arguments) -> int:
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (args.vararg is not None) + (args.kwarg is not None)


def test_no_function_takes_more_than_eight_parameters() -> None:
    found = {
        f"{path.relative_to(REPO_ROOT)}::{name}"
        for path in _modules()
        for name, args in _functions(ast.parse(path.read_text(encoding="utf-8")))
        if parameter_count(args) > MAX_PARAMETERS
    }
    assert found - TOO_MANY_PARAMETERS == set(), "bundle the parameters in a parameter object"
    assert TOO_MANY_PARAMETERS - found == set(), "fixed: take it off TOO_MANY_PARAMETERS"


def test_no_module_is_over_five_hundred_lines() -> None:
    found = {
        str(path.relative_to(REPO_ROOT))
        for path in _modules()
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_LINES
    }
    assert found - TOO_LONG == set(), "split the module along its concepts"
    assert TOO_LONG - found == set(), "fixed: take it off TOO_LONG"


def test_the_parameter_count_skips_self_and_counts_star_args() -> None:
    tree = ast.parse("class A:\n    def f(self, a, *b, c, **d): ...\ndef g(cls, x): ...\n")
    counts = {name: parameter_count(args) for name, args in _functions(tree)}
    assert counts == {"A.f": 4, "g": 1}

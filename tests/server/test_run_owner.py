"""A run has one owner: no server module but the run manager's (_runs.py) and the accept pass's
(_acceptance.py, which plans, sends and settles one accept) assigns a field of a ``Run`` or
mutates one in place (the hub and the features only read them)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import driveros_lsp
from driveros_lsp._runs import Run

PACKAGE = Path(driveros_lsp.__file__).parent
FIELDS = {f.name for f in dataclasses.fields(Run)}
MUTATORS = {"add", "append", "clear", "difference_update", "discard", "extend", "pop", "remove"}
MUTATORS |= {"update", "insert", "setdefault", "sort"}


#: The modules that write a run: the run manager, and the accept pass.
WRITERS = {"_runs.py", "_acceptance.py"}

#: The names the server's modules give a Run.
RUN_NAMES = {"run", "r"}


def _field_of_a_run(node: ast.expr) -> str | None:
    """``run.<field>`` for a field of a Run."""
    if (
        isinstance(node, ast.Attribute)
        and node.attr in FIELDS
        and isinstance(node.value, ast.Name)
        and node.value.id in RUN_NAMES
    ):
        return f"{node.value.id}.{node.attr}"
    return None


def writes(source: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
            and (name := _field_of_a_run(node.func.value))
        ):
            found.append(f"{name}.{node.func.attr}()")
        for target in targets:
            for part in ast.walk(target) if isinstance(target, ast.Tuple) else [target]:
                while isinstance(part, ast.Attribute | ast.Subscript):
                    if name := _field_of_a_run(part):
                        found.append(name)
                        break
                    part = part.value
    return found


def test_only_the_run_manager_writes_a_run() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in WRITERS and (found := writes(path.read_text()))
    }
    assert offenders == {}


def test_the_check_sees_writes() -> None:
    code = "run.pending = []\nrun.in_flight.update(x)\nr.conflicts[0] = 'a'\nrun.kept += 1\n"
    assert sorted(writes(code)) == sorted(
        ["run.pending", "run.in_flight.update()", "r.conflicts", "run.kept"]
    )
    assert writes("x = run.pending\nd[run.run_id] = 1\nplan.conflicts = {}\n") == []

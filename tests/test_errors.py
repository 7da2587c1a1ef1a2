"""The error tree is documented in one place: the docstring of driveros._errors and
docs/errors.md both list exactly the DriverosError classes that exist, under their parents."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import driveros
import driveros_lsp
from driveros import DriverosError, _errors

DOCS = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
_BRANCH = re.compile(r"^(?P<indent>(?:│   |    )*)(?:├── |└── )(?P<name>\w+)")


def all_error_classes() -> dict[str, type[DriverosError]]:
    """Every subclass of DriverosError, after importing every module of both packages."""
    for package in (driveros, driveros_lsp):
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            importlib.import_module(info.name)
    found: dict[str, type[DriverosError]] = {"DriverosError": DriverosError}
    todo: list[type[DriverosError]] = [DriverosError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.split(".")[0] not in ("driveros", "driveros_lsp"):
                continue  # a test's own subclass
            assert found.get(sub.__name__, sub) is sub, f"two error classes {sub.__name__}"
            if sub.__name__ not in found:
                found[sub.__name__] = sub
                todo.append(sub)
    return found


def drawn_tree(text: str) -> dict[str, str | None]:
    """name -> drawn parent (None for the root) of the first box-drawn tree in ``text``."""
    lines = [line.strip("\n") for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("DriverosError "))
    base = len(lines[start]) - len(lines[start].lstrip())
    tree: dict[str, str | None] = {"DriverosError": None}
    stack = ["DriverosError"]
    for line in lines[start + 1 :]:
        match = _BRANCH.match(line[base:])
        if match is None:
            break
        depth = len(match["indent"]) // 4
        name = match["name"]
        assert name not in tree, f"{name} is drawn twice"
        del stack[depth + 1 :]
        tree[name] = stack[depth]
        stack.append(name)
    return tree


def _check(tree: dict[str, str | None], where: str) -> None:
    classes = all_error_classes()
    assert sorted(tree) == sorted(classes), (
        f"{where} is out of date: missing {sorted(set(classes) - set(tree))}, "
        f"not a class {sorted(set(tree) - set(classes))}"
    )
    for name, parent in tree.items():
        if parent is not None:
            bases = [b.__name__ for b in classes[name].__bases__]
            assert parent in bases, f"{where}: {name} is drawn under {parent}, its bases {bases}"


def test_errors_docstring_draws_every_class() -> None:
    assert _errors.__doc__ is not None
    _check(drawn_tree(_errors.__doc__), "the docstring of driveros._errors")


def test_errors_docs_page_draws_every_class() -> None:
    _check(drawn_tree(DOCS.read_text(encoding="utf-8")), "docs/errors.md (tree)")


def test_errors_docs_page_explains_every_class() -> None:
    text = DOCS.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \|", text, flags=re.MULTILINE)
    assert len(rows) == len(set(rows)), "a class has two rows"
    assert sorted(rows) == sorted(all_error_classes()), "docs/errors.md table is out of date"


def test_errors_check_fails_for_an_undocumented_or_misplaced_class() -> None:
    doc = _errors.__doc__
    assert doc is not None
    with pytest.raises(AssertionError, match="missing \\['ToolError'\\]"):
        _check(drawn_tree(doc.replace("ToolError", "NoSuchError")), "edited")
    with pytest.raises(AssertionError, match="StallError is drawn under"):
        moved = doc.replace("    │       └── StallError", "    ├── StallError")
        _check(drawn_tree(moved), "edited")

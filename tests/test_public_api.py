"""The curated public surface, pinned.

Every public module (no ``_`` in any part of its dotted name) that defines ``__all__`` is
listed in ``public_api.json`` beside this file with its names. Adding or removing a public
name, or a public module with an ``__all__``, fails here until the snapshot is updated on
purpose: ``.venv/bin/python tests/test_public_api.py`` rewrites it from the code.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

SNAPSHOT = Path(__file__).with_name("public_api.json")
ROOTS = ("driveros", "driveros_lsp")


def public_modules() -> dict[str, ModuleType]:
    """Every importable public module of the roots, by dotted name."""
    found: dict[str, ModuleType] = {}
    for root in ROOTS:
        package = importlib.import_module(root)
        names = [root] + [
            info.name for info in pkgutil.walk_packages(package.__path__, prefix=f"{root}.")
        ]
        for name in names:
            if any(part.startswith("_") for part in name.split(".")):
                continue
            found[name] = importlib.import_module(name)
    return found


def current_surface() -> dict[str, list[str]]:
    return {
        name: sorted(module.__all__)
        for name, module in sorted(public_modules().items())
        if hasattr(module, "__all__")
    }


def isort_key(name: str) -> tuple[int, list[int | str]]:
    """ruff's isort-style order (RUF022): CONSTANTS, then Classes, then everything else,
    each in natural order (``x2`` before ``x10``)."""
    if len(name) > 1 and name.upper() == name and any(c.isalpha() for c in name):
        kind = 0
    elif name[:1].isupper():
        kind = 1
    else:
        kind = 2
    return kind, [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def test_public_all_matches_the_pinned_snapshot() -> None:
    pinned = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    current = current_surface()
    added = {m: sorted(set(n) - set(pinned.get(m, []))) for m, n in current.items()}
    removed = {m: sorted(set(n) - set(current.get(m, []))) for m, n in pinned.items()}
    drift = {
        "added": {m: n for m, n in added.items() if n},
        "removed": {m: n for m, n in removed.items() if n},
        "modules added": sorted(set(current) - set(pinned)),
        "modules removed": sorted(set(pinned) - set(current)),
    }
    assert current == pinned, (
        f"the public API changed: {drift}; if on purpose, run "
        "`.venv/bin/python tests/test_public_api.py` and commit tests/public_api.json"
    )


def test_public_snapshot_is_not_empty() -> None:
    pinned = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert "driveros" in pinned and "DriverosError" in pinned["driveros"]
    assert "driveros_lsp" in pinned


@pytest.mark.parametrize("name", sorted(current_surface()))
def test_public_all_is_sorted_unique_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), "duplicate names in __all__"
    assert exported == sorted(exported, key=isort_key), f"{name}.__all__ is not sorted"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr} is in __all__ but missing"


def test_cli_usage_error_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    from driveros.cli._main import main

    assert main(["--no-such-flag"]) == 1
    assert "error" in capsys.readouterr().err


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(current_surface(), indent=2) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {SNAPSHOT}\n")

"""The curated public surface of driveros.review stays sorted, unique and importable."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("name", ["driveros.review", "driveros.approval"])
def test_public_all_sorted_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    # isort-style order (what ruff's RUF022 keeps): CONSTANTS, Classes, functions.
    assert exported == sorted(
        exported, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)
    )
    assert len(set(exported)) == len(exported)
    missing = [attr for attr in exported if not hasattr(module, attr)]
    assert missing == []


def test_public_errors_join_the_one_tree() -> None:
    from driveros import ConfigError, DriverosError
    from driveros.approval import NoTerminalError
    from driveros.review import ConflictError, ReviewError

    assert issubclass(ReviewError, DriverosError)
    assert issubclass(ConflictError, ReviewError)
    assert issubclass(NoTerminalError, ConfigError)

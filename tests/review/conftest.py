"""Fixtures for review tests: real repositories and plain directories in tmp dirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.review import STRATEGY_VAR
from tests.review._repo import available_strategies, make_repo


@pytest.fixture
def scratch_base(tmp_path: Path) -> Path:
    """Where scratch copies go, so a test can check that nothing is left behind."""
    base = tmp_path / "scratch"
    base.mkdir()
    return base


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "proj",
        {
            ".gitignore": "*.log\nbuild/\n",
            "README.md": "# demo\n",
            "src/app.py": "def add(a, b):\n    return a - b\n",
            "src/util.py": "X = 1\n",
            "tests/test_app.py": (
                "from src.app import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
            ),
        },
    )


#: Test modules whose scratch semantics (changes, diffs, apply, conflicts, kept copies) must
#: hold for every strategy; they run once per strategy available on this machine.
_EVERY_STRATEGY = frozenset(
    {
        "test_actions",
        "test_buffers",
        "test_changes",
        "test_diff_patch",
        "test_kept",
        "test_scratch",
        "test_environments",
    }
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if module in _EVERY_STRATEGY and "scratch_strategy" in metafunc.fixturenames:
        metafunc.parametrize("scratch_strategy", available_strategies(), indirect=True)


@pytest.fixture(autouse=True)
def scratch_strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The strategy this test runs with (``$DRIVEROS_SCRATCH_STRATEGY``; ``auto``, which is
    ``overlay`` where the machine can mount one, unless the module is parametrized over the
    strategies)."""
    name = str(getattr(request, "param", "auto"))
    monkeypatch.setenv(STRATEGY_VAR, name)
    return name

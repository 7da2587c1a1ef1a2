"""Fixtures for review tests: real repositories and plain directories in tmp dirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.review._repo import make_repo


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

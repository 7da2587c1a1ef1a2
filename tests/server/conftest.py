"""Fixtures for the language-server tests: a workspace and a scripted model (loopback)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from driveros.testing import ScriptedModelServer, Turn

CALC = "def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return x * 2\n"


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Servers started by a test get their own state directory and temp dir (under the test's
    tmp_path): the scratch copies of proposals a server keeps at exit go away with the test,
    never into the user's state directory."""
    state = tmp_path / "driveros-state"
    tmp = tmp_path / "driveros-tmp"
    tmp.mkdir(exist_ok=True)
    monkeypatch.setenv("DRIVEROS_STATE_DIR", str(state))
    monkeypatch.setenv("TMPDIR", str(tmp))
    return state


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "notes.txt").write_text("hello\n")
    return root


def model_env(model: ScriptedModelServer) -> dict[str, str]:
    """The server environment that points the openai provider at ``model``."""
    return {"OPENAI_BASE_URL": model.openai_base_url, "OPENAI_API_KEY": "test-key"}


ModelFactory = Callable[..., AbstractAsyncContextManager[ScriptedModelServer]]


@pytest.fixture
def scripted_model() -> ModelFactory:
    """``async with scripted_model(turns) as model:`` a loopback model playing ``turns``."""

    @asynccontextmanager
    async def start(turns: list[Turn], **kwargs: Any) -> AsyncIterator[ScriptedModelServer]:
        async with ScriptedModelServer(turns, **kwargs) as srv:
            yield srv

    return start

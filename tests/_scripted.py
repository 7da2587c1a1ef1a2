"""Shared by the agent and CLI tests: the calc project and the scripted model's environment."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

__all__ = ["CALC", "FIX_CALC", "TEST_CALC", "Wire", "calc_repo", "leaking_turns", "model_environ"]

CALC = "def add(a, b):\n    return a - b\n"
#: The one edit that makes the calc project's test pass.
FIX_CALC = ToolCallSpec(
    "edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
)
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"

Wire = Literal["openai", "openrouter", "anthropic"]


@pytest.fixture
def calc_repo(tmp_path: Path) -> Path:
    """A tiny project whose one test fails until ``a - b`` becomes ``a + b``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST_CALC)
    return repo


def model_environ(server: ScriptedModelServer, wire: Wire, api_key: str) -> dict[str, str]:
    """The variables that point driveros at ``server`` speaking ``wire`` with ``api_key``."""
    if wire == "openrouter":
        return {
            "OPENROUTER_API_KEY": api_key,
            "OPENROUTER_BASE_URL": server.openai_base_url,
            "OPENROUTER_MODEL": "scripted",
        }
    if wire == "openai":
        return {
            "OPENAI_API_KEY": api_key,
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_MODEL": "scripted",
        }
    return {
        "ANTHROPIC_API_KEY": api_key,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        "ANTHROPIC_MODEL": "scripted",
    }


def leaking_turns(workspace: Path, secret: str) -> list[Turn]:
    """Plant ``secret`` in ``leak.txt``; script a model that says, thinks, reads and echoes it."""
    (workspace / "leak.txt").write_text(f"key={secret}\n")
    return [
        Turn(
            text=f"The key is {secret}",
            thinking=f"I could use {secret}",
            tool_calls=[
                ToolCallSpec("read_file", {"path": "leak.txt"}),
                ToolCallSpec("run", {"command": f"echo {secret}"}),
            ],
        ),
        Turn(text=f"Found {secret}."),
    ]

"""Fixtures for the ACP tests: the official schema, the calc project, the agent's environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from tests._scripted import calc_repo as calc_repo  # the fixture, for these tests
from tests._scripted import model_environ

from driveros.testing import ScriptedModelServer

from ._client import Schema, install_sdk


@pytest.fixture(scope="session")
def acp_sdk() -> Path:
    return install_sdk()


@pytest.fixture(scope="session")
def acp_schema(acp_sdk: Path) -> Schema:
    return Schema(acp_sdk / "schema" / "v1" / "schema.json")


def acp_environ(server: ScriptedModelServer) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME", ""),
        "DRIVEROS_STATE_DIR": os.environ.get("DRIVEROS_STATE_DIR", ""),
        "DRIVEROS_DIAGNOSTICS": "off",
        **model_environ(server, "openai", "test-key-acp"),
    }

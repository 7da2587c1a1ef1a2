"""Fixtures for the ACP tests: the official schema, the calc project, the agent's environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests._scripted import calc_repo as calc_repo  # the fixture, for these tests
from tests._scripted import model_environ

from driveros.testing import ScriptedModelServer

from ._client import AcpClient, Schema, install_sdk, start_agent


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


async def open_session(
    schema: Schema,
    server: ScriptedModelServer,
    cwd: Path,
    *,
    capabilities: dict[str, Any] | None = None,
    mcp_servers: list[dict[str, Any]] | None = None,
) -> tuple[AcpClient, str]:
    """``driveros acp`` started in ``cwd`` with ``server`` as its model, initialized with the
    client's ``capabilities``, and one new session in ``cwd`` (its id)."""
    client = await start_agent(schema, env=acp_environ(server), cwd=cwd)
    caps = capabilities or {}
    await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
    params = {"cwd": str(cwd), "mcpServers": mcp_servers or []}
    new = await client.request("session/new", params)
    return client, str(new["sessionId"])

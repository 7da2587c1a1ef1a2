"""A damaged memory database seen from the editor: every memory command answers RequestFailed
with the store's message, never an internal error with a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from driveros.config import load_environment
from driveros.memory import Provenance, open_memory_store
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import private_state as private_state  # isolated state (autouse)

REQUEST_FAILED = -32803


async def _seed(workspace: Path) -> Path:
    env = load_environment(cwd=workspace, environ={})
    store = await open_memory_store(workspace, env)
    async with store:
        await store.apply(
            adds=[f"fact number {i}: " + "padding " * 40 for i in range(300)],
            provenance=Provenance(source="manual", task="seed"),
        )
        path = store.path
    return Path(path)


def _damage(db: Path) -> None:
    """Garbage over the second half of the file: the header and schema still read."""
    for extra in ("-wal", "-shm"):
        Path(f"{db}{extra}").unlink(missing_ok=True)
    data = bytearray(db.read_bytes())
    page = 4096
    start = (len(data) // page // 2) * page
    data[start:] = b"\xde\xad\xbe\xef" * ((len(data) - start) // 4)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("command", "args"),
    [
        (protocol.CMD_MEMORY_RECALL, {"query": "fact number"}),
        (protocol.CMD_MEMORY_FORGET, {"id": 7}),
    ],
    ids=["recall", "forget"],
)
async def test_server_memory_damaged_store_is_request_failed(
    tmp_path: Path, command: str, args: dict[str, object]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _damage(await _seed(workspace))
    async with editor_session(workspace) as ed:
        with pytest.raises(JsonRpcException) as err:
            await ed.command(command, args)
    assert err.value.code == REQUEST_FAILED, (err.value.code, err.value.message)
    assert "memory" in err.value.message
    assert "Traceback" not in err.value.message and "Traceback" not in str(err.value.data)

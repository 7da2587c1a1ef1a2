"""Issue 35 row 3: ``driveros.agent.fix`` on a huge file (600 MB, sparse) reads only the
lines it needs: the server's peak memory stays flat and it keeps answering code actions."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types as lsp

from driveros_lsp import protocol
from tests.server._lsp import editor_session

BIG = 600 * 1024 * 1024


def _peak_rss_kib(pid: int) -> int:
    """The process's peak resident set (VmHWM), in KiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(x for x in status.splitlines() if x.startswith("VmHWM:")).split()[1])


def _diagnostic(line: int, character: int = 0) -> dict[str, object]:
    return {
        "range": {
            "start": {"line": line, "character": character},
            "end": {"line": line, "character": character + 1},
        },
        "message": "something is wrong here",
        "severity": 1,
    }


async def test_fix_on_a_600_mb_sparse_file_keeps_the_servers_memory_flat(
    workspace: Path,
) -> None:
    big = workspace / "huge.py"
    with open(big, "wb") as fh:
        fh.write("x = 'é'\n".encode())
        fh.truncate(BIG)  # one line of zeros after the first: 600 MB without a newline
    async with editor_session(workspace, profile="vscode") as ed:
        pid = ed.client._server.pid
        # The fix path once on a small file: what it imports is loaded before the baseline.
        await ed.command(
            protocol.CMD_AGENT_FIX, {"uri": ed.uri("calc.py"), "diagnostics": [_diagnostic(1)]}
        )
        before = _peak_rss_kib(pid)
        fix = asyncio.ensure_future(
            ed.command(
                protocol.CMD_AGENT_FIX,
                {"uri": ed.uri("huge.py"), "diagnostics": [_diagnostic(0, 6), _diagnostic(3)]},
            )
        )
        actions = await ed.code_actions(
            "calc.py",
            [
                lsp.Diagnostic(
                    range=lsp.Range(
                        start=lsp.Position(line=1, character=4),
                        end=lsp.Position(line=1, character=9),
                    ),
                    message="add returns the difference",
                )
            ],
        )
        assert actions, "code actions answered while the fix reads"
        started = await fix
        assert started["runId"]
        grown_mib = (_peak_rss_kib(pid) - before) / 1024
        assert grown_mib < 100, f"the server's peak RSS grew by {grown_mib:.0f} MiB"

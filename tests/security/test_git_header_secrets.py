"""A repository's ``http.extraheader`` credential (a CI token a ``git clone`` wrote into
``.git/config``) is readable by the run's own commands, in the workspace and in an added
folder: it is masked like a ``.env`` value, in what the model is sent and in the trace."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

from driveros.agent import ToolResult, git_header_secret_values
from driveros.runs import AddedDir, RunSpec
from driveros.testing import ToolCallSpec, Turn
from tests.security._scripted_run import scripted_run

#: No known token shape: only the configuration names it a secret.
BEARER = "Zq9vX2mK8pL4nR7tW1yB5cD3"
PASSWORD = "plainpw-8c1e44d0a9"
BASIC = base64.b64encode(f"x-access-token:{PASSWORD}".encode()).decode()
DECODE = "cut -d' ' -f3 | base64 -d"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def _repos(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, lib = tmp_path / "ws", tmp_path / "lib-main"
    for repo in (ws, lib):
        repo.mkdir()
        _git(repo, "init", "-q")
        (repo / "README.md").write_text("# r\n")
    _git(ws, "config", "http.https://example.com/.extraheader", f"AUTHORIZATION: bearer {BEARER}")
    _git(lib, "config", "http.extraheader", f"AUTHORIZATION: basic {BASIC}")
    _git(lib, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i", "--allow-empty")
    # the added folder is a worktree: its .git is a file naming the git directory
    worktree = tmp_path / "lib"
    _git(lib, "worktree", "add", "-q", str(worktree))
    return ws, lib, worktree


def test_header_credentials_of_a_repository_and_a_worktree(tmp_path: Path) -> None:
    ws, _, worktree = _repos(tmp_path)
    found = git_header_secret_values([ws, worktree, tmp_path / "missing"])
    assert BEARER in found and BASIC in found and PASSWORD in found
    assert f"AUTHORIZATION: bearer {BEARER}" in found


async def test_a_header_credential_never_reaches_the_model_or_the_trace(tmp_path: Path) -> None:
    ws, lib, _ = _repos(tmp_path)
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec(
                    "run", {"command": "git config --get-all http.https://example.com/.extraheader"}
                ),
                ToolCallSpec("run", {"command": f"git -C {lib} config --get http.extraheader"}),
                ToolCallSpec(
                    "run",
                    {"command": f"git -C {lib} config --get http.extraheader | {DECODE}"},
                ),
            ]
        ),
        Turn(text="done"),
    ]
    spec = RunSpec(
        task="look around",
        workspace=ws,
        diagnostics=False,
        approve="policy",
        review=True,  # contained: every command runs, without asking
        add_dirs=[AddedDir(path=lib)],
    )
    seen = await scripted_run(turns, spec, "sk-test-000000000000")
    assert seen.report.result.answer == "done", seen.report.result
    results = [e for e in seen.events if isinstance(e, ToolResult)]
    assert len(results) == 3 and all("[REDACTED]" in r.output for r in results), results
    for secret in (BEARER, BASIC, PASSWORD):
        assert secret not in seen.sent, secret
        assert secret not in seen.trace, secret


READ_HEADERS = (
    "import sys; from pathlib import Path; from driveros.agent import git_header_secret_values;"
    " print(git_header_secret_values([Path(p) for p in sys.argv[1:]]))"
)


def test_header_reading_never_blocks_on_a_planted_fifo(tmp_path: Path) -> None:
    """A workspace (or a command in an earlier run, where there was no ``.git`` to guard)
    makes ``.git`` a FIFO, or a ``.git`` file naming a git directory whose ``config`` is one:
    the next run's start reads past them instead of waiting for a writer forever."""
    fifo_dot, pointed = tmp_path / "fifo-dot", tmp_path / "pointed"
    for ws in (fifo_dot, pointed):
        ws.mkdir()
    os.mkfifo(fifo_dot / ".git")
    (pointed / ".git").write_text("gitdir: gd\n")
    (pointed / "gd").mkdir()
    os.mkfifo(pointed / "gd" / "config")
    (pointed / "gd" / "commondir").write_text("common\n")
    (pointed / "gd" / "common").mkdir()
    (pointed / "gd" / "common" / "config").write_text(
        f'[http]\n\textraheader = "AUTHORIZATION: bearer {BEARER}"\n'
    )
    done = subprocess.run(
        [sys.executable, "-c", READ_HEADERS, str(fifo_dot), str(pointed)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert BEARER in done.stdout  # the regular config beside the FIFO is still read

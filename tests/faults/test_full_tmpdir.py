"""Row 10 of issue 28: a full (or unusable) ``$TMPDIR`` is an error that says so, never a
silent fall back to ``/tmp``. The full directory is a real tiny tmpfs, filled to the brim."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from driveros._errors import ConfigError, TempDirError
from driveros._tmp import temp_root
from driveros.review import ScratchWorkspace
from driveros.state import list_leases
from driveros.testing import ScriptedModelServer
from tests.acp._client import Schema, start_agent
from tests.acp.conftest import acp_environ
from tests.acp.conftest import acp_schema as acp_schema  # the fixtures
from tests.acp.conftest import acp_sdk as acp_sdk
from tests.acp.test_acp_stdio import FS, _prompt
from tests.cli.conftest import DRIVEROS, cli_environ
from tests.cli.conftest import calc_repo as calc_repo  # the fixtures
from tests.cli.conftest import git_repo as git_repo
from tests.review._repo import make_repo
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS
from tests.server.test_run_end import _start_until_ended

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root (CI)")


def _mount(point: Path, *options: str) -> None:
    point.mkdir()
    opts = ",".join(("size=256k", *options))
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(point)], check=True)


@pytest.fixture
def full_tmp(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs with no space left."""
    point = tmp_path / "full"
    _mount(point)
    with open(point / "filler", "wb", buffering=0) as fh, pytest.raises(OSError, match="space"):
        while True:
            fh.write(b"x" * 4096)
    yield point
    subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture
def read_only_tmp(tmp_path: Path) -> Iterator[Path]:
    point = tmp_path / "ro"
    _mount(point, "ro")
    yield point
    subprocess.run(["umount", "-l", str(point)], check=False)


def _fallbacks(tmp_path: Path) -> tuple[Path, Path]:
    """Directories a wrapped CLI sees as ``/tmp`` and ``/var/tmp`` (see :func:`_wrapped`)."""
    return tmp_path / "as-tmp", tmp_path / "as-var-tmp"


def _wrapped(tmp_path: Path) -> tuple[str, ...]:
    """A prefix that runs a command in its own mount namespace, where ``/tmp`` and
    ``/var/tmp`` (Python's fall backs) are the test's own directories: what lands there is
    seen, and nothing of other processes' is. The test's directories stay where they are."""
    fake_tmp, fake_var = _fallbacks(tmp_path)
    fake_tmp.mkdir()
    fake_var.mkdir()
    steps = [f"mount --bind {fake_var} /var/tmp"]
    if tmp_path.is_relative_to("/tmp"):  # keep the test's own tree visible under /tmp
        top = Path("/tmp", tmp_path.relative_to("/tmp").parts[0])
        (fake_tmp / top.name).mkdir()
        steps.append(f"mount --rbind {top} {fake_tmp / top.name}")
    steps.append(f"mount --rbind {fake_tmp} /tmp")
    script = " && ".join(steps) + ' && exec "$0" "$@"'
    return ("unshare", "--mount", "--propagation", "private", "sh", "-c", script)


def test_temp_root_refuses_a_full_read_only_or_missing_tmpdir(
    tmp_path: Path, full_tmp: Path, read_only_tmp: Path
) -> None:
    with pytest.raises(TempDirError, match=r"\$TMPDIR\) is full .*another directory") as full:
        temp_root({"TMPDIR": str(full_tmp)})
    assert isinstance(full.value, ConfigError) and full.value.context["path"] == str(full_tmp)
    with pytest.raises(TempDirError, match=r"\$TMPDIR\) is not writable"):
        temp_root({"TMPDIR": str(read_only_tmp)})
    with pytest.raises(TempDirError, match=r"\$TEMP\) does not exist"):
        temp_root({"TEMP": str(tmp_path / "missing")})
    with pytest.raises(TempDirError, match="is not a directory"):
        (tmp_path / "a-file").write_text("")
        temp_root({"TMP": str(tmp_path / "a-file")})
    assert temp_root({"TMPDIR": str(tmp_path)}) == tmp_path
    assert temp_root({"TMPDIR": "", "TMP": str(tmp_path)}) == tmp_path


async def test_scratch_copy_in_a_full_tmpdir_fails_and_writes_nowhere_else(
    tmp_path: Path, full_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "ws", {"a.py": "A = 1\n"})
    monkeypatch.setenv("TMPDIR", str(full_tmp))
    with pytest.raises(TempDirError, match=str(full_tmp)):
        await ScratchWorkspace.create(repo)
    assert await list_leases() == []  # no copy was registered anywhere
    assert sorted(os.listdir(full_tmp)) == ["filler"]


@pytest.mark.parametrize("review", [True, False], ids=["review", "in place"])
async def test_cli_run_with_a_full_tmpdir_says_so(
    git_repo: Path, full_tmp: Path, tmp_path: Path, review: bool
) -> None:
    how = ("--review", "--review-action", "discard") if review else ()
    env = {"TMPDIR": str(full_tmp)}
    async with ScriptedModelServer(FIX_TURNS) as model:
        argv = (*_wrapped(tmp_path), str(DRIVEROS), "agent", "--task", "fix", *how)
        proc = await asyncio.create_subprocess_exec(
            *argv, "--provider", "openai", "--format", "json",
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=cli_environ(model) | env, cwd=git_repo,
        )  # fmt: skip
        out, err_bytes = await proc.communicate()
    err = err_bytes.decode()
    assert proc.returncode == 1, err
    result = json.loads(out)
    assert (result["outcome"], result["exit_code"]) == ("setup_error", 1)
    assert f"{full_tmp} ($TMPDIR) is full" in json.dumps(result) + err
    assert "Traceback" not in err
    for fallback in (*_fallbacks(tmp_path), git_repo):
        assert [n for n in os.listdir(fallback) if n.startswith("driveros-")] == []
    assert sorted(os.listdir(full_tmp)) == ["filler"]


async def test_editor_run_with_a_full_tmpdir_ends_setup_error_and_says_so(
    git_repo: Path, full_tmp: Path
) -> None:
    async with (
        ScriptedModelServer(FIX_TURNS) as model,
        editor_session(
            git_repo, env={**model_env(model), "TMPDIR": str(full_tmp)}, settings=SETTINGS
        ) as ed,
    ):
        run_id, _, result, errors = await _start_until_ended(ed, "fix add")
    assert result["outcome"] == "setup_error" and result["exit_code"] == 1
    assert f"{full_tmp} ($TMPDIR) is full" in (result["error"] or "")
    assert any(run_id in m and "is full" in m for m in errors), errors
    assert sorted(os.listdir(full_tmp)) == ["filler"]


async def test_acp_prompt_with_a_full_tmpdir_says_so(
    acp_schema: Schema, calc_repo: Path, full_tmp: Path
) -> None:
    async with ScriptedModelServer(FIX_TURNS) as model:
        env = {**acp_environ(model), "TMPDIR": str(full_tmp)}
        client = await start_agent(acp_schema, env=env, cwd=calc_repo)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": FS})
        new = await client.request("session/new", {"cwd": str(calc_repo), "mcpServers": []})
        result = await asyncio.wait_for(
            client.request("session/prompt", _prompt(new["sessionId"], "fix add")), 60
        )
        assert await client.close() == 0
    assert client.errors == []
    assert result == {"stopReason": "end_turn"}
    assert "setup_error" in client.text() and f"{full_tmp} ($TMPDIR) is full" in client.text()
    assert sorted(os.listdir(full_tmp)) == ["filler"]

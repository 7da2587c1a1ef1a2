"""LocalSandbox: commands, environment, process groups and the file half of the protocol."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from driveros.sandbox import (
    EditError,
    FileTooLargeError,
    LocalSandbox,
    NotFoundError,
    NotTextError,
    PathEscapeError,
    Sandbox,
    SandboxClosedError,
    SearchError,
    WrongKindError,
)
from tests.sandbox.conftest import host_pids


async def wait_for(predicate: object, what: str) -> None:
    """Poll ``predicate`` (a no-argument callable) until true; fail after a generous wait."""
    assert callable(predicate)
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.02)
    pytest.fail(f"gave up waiting for {what}")


async def test_local_is_a_sandbox(local: LocalSandbox, workspace: Path) -> None:
    assert isinstance(local, Sandbox)
    assert local.tier == "local"
    assert local.workspace == workspace.resolve()


async def test_run_separates_streams_and_exit_code(local: LocalSandbox) -> None:
    result = await local.run("echo out; echo err >&2; exit 3")
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert not result.ok and not result.timed_out


async def test_run_feeds_stdin_and_defaults_to_devnull(local: LocalSandbox) -> None:
    fed = await local.run("tr a-z A-Z", stdin=b"shout")
    assert fed.stdout == "SHOUT"
    empty = await local.run("cat; echo done")
    assert empty.stdout == "done\n"


async def test_run_uses_cwd_inside_workspace(local: LocalSandbox, workspace: Path) -> None:
    result = await local.run("pwd; ls", cwd="src")
    assert result.stdout == f"{workspace.resolve() / 'src'}\napp.py\n"
    with pytest.raises(PathEscapeError):
        await local.run("pwd", cwd="..")
    with pytest.raises(NotFoundError):
        await local.run("pwd", cwd="missing")


async def test_run_timeout_kills_the_whole_group(local: LocalSandbox, workspace: Path) -> None:
    result = await local.run("sleep 6065 & sleep 6066", timeout=1.5)
    assert result.timed_out and result.exit_code == 124
    await wait_for(lambda: not host_pids("sleep", "6065"), "the background sleep to die")


async def test_run_kills_background_leftovers_when_done(
    local: LocalSandbox, workspace: Path
) -> None:
    result = await local.run("sleep 6067 >/dev/null 2>&1 & echo $! > bg.pid")
    assert result.ok and (workspace / "bg.pid").exists()
    await wait_for(lambda: not host_pids("sleep", "6067"), "the leftover sleep to die")


async def test_run_cancel_kills_the_group_and_reraises(
    local: LocalSandbox, workspace: Path
) -> None:
    command = "echo $$ > sh.pid; sleep 6068 & sleep 6069"
    task = asyncio.create_task(local.run(command))
    await wait_for(lambda: host_pids("sleep", "6069"), "the command to start")
    assert host_pids("/bin/sh", "-c", command) and host_pids("sleep", "6068")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_for(lambda: not host_pids("/bin/sh", "-c", command), "the canceled shell to die")
    await wait_for(lambda: not host_pids("sleep", "6068"), "its background sleep to die")


async def test_run_caps_output_per_stream(workspace: Path) -> None:
    async with LocalSandbox(workspace, output_cap=1000) as sandbox:
        result = await sandbox.run("head -c 200000 /dev/zero | tr '\\0' x; echo small >&2")
    assert len(result.stdout) == 1000 and result.stdout_truncated
    assert result.stderr == "small\n" and not result.stderr_truncated
    assert result.output_cap == 1000


async def test_run_env_is_minimal_and_scrubbed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRIVEROS_TEST_LEAK", "leaked")
    async with LocalSandbox(workspace) as minimal:
        seen = (await minimal.run("env")).stdout
    assert "DRIVEROS_TEST_LEAK" not in seen and "TERM=dumb" in seen

    base = {
        "PATH": "/usr/bin:/bin",
        "OPENAI_API_KEY": "sk-secret",
        "X_AI_API_KEY": "xai-secret",
        "GITHUB_TOKEN": "ghp",
        "DATABASE_URL": "postgres://u:pw@h/db",
        "CI": "kept",
        "NOT_ALLOWLISTED": "dropped",
    }
    async with LocalSandbox(workspace, base_env=base) as passed:
        seen = (await passed.run("env", env={"EXPLICIT": "yes"})).stdout
    assert "CI=kept" in seen and "EXPLICIT=yes" in seen and "NOT_ALLOWLISTED" not in seen
    for secret in ("sk-secret", "xai-secret", "ghp", "postgres://"):
        assert secret not in seen


async def test_default_home_is_private_and_removed(workspace: Path) -> None:
    sandbox = LocalSandbox(workspace)
    home = (await sandbox.run("echo $HOME")).stdout.strip()
    assert Path(home).is_dir() and not Path(home).is_relative_to(workspace)
    await sandbox.aclose()
    assert not Path(home).exists()
    with pytest.raises(SandboxClosedError):
        await sandbox.run("true")
    with pytest.raises(SandboxClosedError):
        await sandbox.read_file("hello.txt")


async def test_write_then_read_roundtrip_creates_parents(
    local: LocalSandbox, workspace: Path
) -> None:
    await local.write_file("new/deep/file.txt", "héllo\n")
    assert await local.read_file("new/deep/file.txt") == "héllo\n"
    assert (workspace / "new/deep/file.txt").read_bytes() == "héllo\n".encode()
    assert sorted(os.listdir(workspace / "new/deep")) == ["file.txt"]  # no temp left behind


async def test_write_keeps_mode_of_replaced_file(local: LocalSandbox, workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    await local.write_file("run.sh", "#!/bin/sh\necho hi\n")
    assert script.stat().st_mode & 0o777 == 0o755
    assert (await local.run("./run.sh")).stdout == "hi\n"


async def test_read_binary_needs_read_bytes(local: LocalSandbox, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(NotTextError):
        await local.read_file("blob.bin")
    assert await local.read_bytes("blob.bin") == b"\xff\xfe\x00binary"


async def test_read_refuses_files_over_the_limit(workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 5000)
    async with LocalSandbox(workspace, max_read=4096) as sandbox:
        with pytest.raises(FileTooLargeError):
            await sandbox.read_file("big.txt")


async def test_read_errors_are_typed(local: LocalSandbox) -> None:
    with pytest.raises(NotFoundError):
        await local.read_file("nope.txt")
    with pytest.raises(WrongKindError):
        await local.read_file("src")
    with pytest.raises(WrongKindError):
        await local.list_dir("hello.txt")


async def test_edit_replaces_exact_text_once_or_all(local: LocalSandbox, workspace: Path) -> None:
    assert await local.edit("src/app.py", "return 42", "return 43") == 1
    assert "return 43" in (workspace / "src/app.py").read_text()
    await local.write_file("dup.txt", "a a a")
    with pytest.raises(EditError, match="3 times"):
        await local.edit("dup.txt", "a", "b")
    assert (workspace / "dup.txt").read_text() == "a a a"
    assert await local.edit("dup.txt", "a", "b", replace_all=True) == 3
    assert (workspace / "dup.txt").read_text() == "b b b"
    with pytest.raises(EditError, match="not found"):
        await local.edit("dup.txt", "zzz", "y")
    with pytest.raises(NotFoundError):
        await local.edit("missing.txt", "a", "b")


async def test_list_dir_and_stat_report_kinds(local: LocalSandbox, workspace: Path) -> None:
    (workspace / "link").symlink_to("hello.txt")
    entries = await local.list_dir(".")
    assert [(e.name, e.kind) for e in entries] == [
        ("hello.txt", "file"),
        ("link", "symlink"),
        ("src", "dir"),
    ]
    assert entries[0].size == len("hello world\n")
    assert (await local.stat("link")).kind == "symlink"
    assert (await local.stat(".")).kind == "dir"
    assert (await local.stat("src/app.py")).size == (workspace / "src/app.py").stat().st_size


async def test_symlink_inside_workspace_is_followed_for_reads(
    local: LocalSandbox, workspace: Path
) -> None:
    (workspace / "alias").symlink_to("src")
    (workspace / "greeting").symlink_to("alias/../hello.txt")
    assert await local.read_file("alias/app.py") == "def main():\n    return 42\n"
    assert await local.read_file("greeting") == "hello world\n"
    assert [e.name for e in await local.list_dir("alias")] == ["app.py"]


async def test_remove_file_dir_and_link(local: LocalSandbox, workspace: Path) -> None:
    (workspace / "link").symlink_to("hello.txt")
    await local.remove("link")
    assert (workspace / "hello.txt").exists() and not (workspace / "link").is_symlink()
    await local.remove("src")
    assert not (workspace / "src").exists()
    await local.remove("hello.txt")
    assert os.listdir(workspace) == []
    with pytest.raises(NotFoundError):
        await local.remove("hello.txt")


async def test_search_with_ripgrep_and_fallback(workspace: Path) -> None:
    (workspace / "src" / "more.py").write_text("x = 1\ndef helper():\n    pass\n")
    expected = [("src/app.py", 1, "def main():"), ("src/more.py", 2, "def helper():")]
    async with LocalSandbox(workspace, base_env={"PATH": "/usr/bin:/bin"}) as with_rg:
        found = await with_rg.search(r"^def \w+", glob="*.py")
        assert sorted((m.path, m.line, m.text) for m in found) == expected
        assert [m.path for m in await with_rg.search("def", path="src", max_results=1)] in (
            [["src/app.py"], ["src/more.py"]]
        )
        with pytest.raises(SearchError):
            await with_rg.search("(unclosed")
    async with LocalSandbox(workspace, base_env={"PATH": "/nonexistent"}) as fallback:
        found = await fallback.search(r"^def \w+", glob="*.py")
        assert sorted((m.path, m.line, m.text) for m in found) == expected
        with pytest.raises(SearchError):
            await fallback.search("(unclosed")


def test_import_is_cheap_and_lazy_about_docker() -> None:
    import subprocess
    import sys

    code = "import sys, driveros.sandbox; print('docker' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_search_takes_a_nul_in_the_pattern_and_refuses_one_in_the_glob(
    workspace: Path,
) -> None:
    (workspace / "blob.bin").write_bytes(b"head\x00tail\n")
    for path_env in ("/usr/bin:/bin", "/nonexistent"):  # ripgrep, then the Python fallback
        async with LocalSandbox(workspace, base_env={"PATH": path_env}) as box:
            # An argv cannot hold NUL (it raised ValueError); the pattern is an answer, not a
            # crash (ripgrep reads NUL in a binary file as a line end, so it may find nothing).
            found = await box.search("head\x00tail")
            assert [m.path for m in found] in ([], ["blob.bin"]), path_env
            with pytest.raises(SearchError, match="NUL"):
                await box.search("x", glob="*\x00.py")


async def test_a_start_canceled_while_making_its_dirs_leaves_none(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile
    import time

    private = tmp_path / "private-tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    real = os.mkdir
    making = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if Path(path).name.startswith("driveros-sbx-"):
            loop.call_soon_threadsafe(making.set)
            time.sleep(0.3)  # the directory appears after the caller was canceled
        real(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", slow_mkdir)
    box = LocalSandbox(workspace, base_env={"PATH": "/usr/bin:/bin"})
    starting = asyncio.create_task(box.start())
    await making.wait()
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    await box.aclose()
    await asyncio.sleep(0.5)  # long enough for a thread left running to make its directory
    assert [p.name for p in private.iterdir()] == []

"""The escape and fault suite: every attempt is refused with a typed error, nothing outside
the workspace changes, and faults (huge output, endless commands, bombs) stay bounded."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from driveros.sandbox import (
    DockerSandbox,
    InvalidPathError,
    LocalSandbox,
    NotFoundError,
    PathEscapeError,
    PolicyError,
    SandboxError,
    SpecialFileError,
)
from tests.sandbox.conftest import make_workspace, require_docker, snapshot

Attempt = Callable[[LocalSandbox], Awaitable[Any]]


async def assert_refused(
    attempt: Awaitable[Any], error: type[SandboxError], outside: Path, before: dict[str, str]
) -> SandboxError:
    with pytest.raises(error) as caught:
        await attempt
    assert str(caught.value), "a refusal must say why"
    assert snapshot(outside) == before, "something outside the workspace changed"
    return caught.value


# -- every argument position refuses `..` and absolute paths ------------------------------

METHODS: dict[str, Callable[[LocalSandbox, str], Awaitable[Any]]] = {
    "read_file": lambda s, p: s.read_file(p),
    "read_bytes": lambda s, p: s.read_bytes(p),
    "write_file": lambda s, p: s.write_file(p, "pwned\n"),
    "edit": lambda s, p: s.edit(p, "top", "pwned"),
    "list_dir": lambda s, p: s.list_dir(p),
    "search": lambda s, p: s.search("secret", path=p),
    "stat": lambda s, p: s.stat(p),
    "remove": lambda s, p: s.remove(p),
    "run_cwd": lambda s, p: s.run("touch pwned", cwd=p),
    "session_cwd": lambda s, p: s.open_session(cwd=p),
    "process_cwd": lambda s, p: s.start_process("touch pwned", cwd=p),
}


DOTDOT = ["..", "../outside/secret.txt", "src/../../outside/secret.txt", "src/..", "./../x"]


@pytest.mark.parametrize("method", sorted(METHODS))
async def test_escape_dotdot_in_every_argument(
    local: LocalSandbox, outside: Path, method: str
) -> None:
    before = snapshot(outside)
    for path in DOTDOT:
        await assert_refused(METHODS[method](local, path), PathEscapeError, outside, before)


@pytest.mark.parametrize("method", sorted(METHODS))
async def test_escape_absolute_path_in_every_argument(
    local: LocalSandbox, outside: Path, method: str
) -> None:
    before = snapshot(outside)
    for path in (str(outside / "secret.txt"), str(outside), "/etc/passwd", "/"):
        await assert_refused(METHODS[method](local, path), PathEscapeError, outside, before)
    inside = str(local.workspace / "hello.txt")
    error = await assert_refused(METHODS[method](local, inside), PathEscapeError, outside, before)
    assert "did you mean 'hello.txt'" in str(error)


# -- symlinks ------------------------------------------------------------------------------


async def test_escape_absolute_symlink_file(local: LocalSandbox, outside: Path) -> None:
    (local.workspace / "abs").symlink_to(outside / "secret.txt")
    before = snapshot(outside)
    await assert_refused(local.read_file("abs"), PathEscapeError, outside, before)
    await assert_refused(local.write_file("abs", "pwned"), PathEscapeError, outside, before)
    await assert_refused(local.edit("abs", "top", "pwned"), PathEscapeError, outside, before)


async def test_escape_relative_symlink_file(local: LocalSandbox, outside: Path) -> None:
    (local.workspace / "rel").symlink_to("../outside/secret.txt")
    before = snapshot(outside)
    await assert_refused(local.read_file("rel"), PathEscapeError, outside, before)
    await assert_refused(local.write_file("rel", "pwned"), PathEscapeError, outside, before)


async def test_escape_symlinked_directory(local: LocalSandbox, outside: Path) -> None:
    (local.workspace / "absdir").symlink_to(outside)
    (local.workspace / "reldir").symlink_to("../outside/sub")
    before = snapshot(outside)
    for link in ("absdir", "reldir"):
        await assert_refused(local.list_dir(link), PathEscapeError, outside, before)
        await assert_refused(local.read_file(f"{link}/inner.txt"), PathEscapeError, outside, before)
        await assert_refused(
            local.write_file(f"{link}/new.txt", "x"), PathEscapeError, outside, before
        )
        await assert_refused(local.remove(f"{link}/inner.txt"), PathEscapeError, outside, before)
        await assert_refused(local.run("touch pwned", cwd=link), PathEscapeError, outside, before)
        await assert_refused(local.search("inner", path=link), PathEscapeError, outside, before)


async def test_escape_dangling_symlink_creates_nothing(local: LocalSandbox, outside: Path) -> None:
    (local.workspace / "dangling-abs").symlink_to(outside / "created-by-attack.txt")
    (local.workspace / "dangling-rel").symlink_to("../outside/created-too.txt")
    (local.workspace / "dangling-dir").symlink_to(outside / "newdir")
    before = snapshot(outside)
    for link in ("dangling-abs", "dangling-rel"):
        await assert_refused(local.write_file(link, "pwned"), PathEscapeError, outside, before)
        await assert_refused(local.read_file(link), PathEscapeError, outside, before)
    await assert_refused(
        local.write_file("dangling-dir/file.txt", "pwned"), PathEscapeError, outside, before
    )
    assert not (outside / "newdir").exists()


async def test_escape_chained_symlinks(local: LocalSandbox, outside: Path) -> None:
    ws = local.workspace
    (ws / "c").symlink_to(outside)
    (ws / "src" / "b").symlink_to("../c")
    (ws / "a").symlink_to("src/b")
    before = snapshot(outside)
    await assert_refused(local.read_file("a/secret.txt"), PathEscapeError, outside, before)
    await assert_refused(local.write_file("a/secret.txt", "x"), PathEscapeError, outside, before)


async def test_escape_symlink_loop_is_refused_not_hung(local: LocalSandbox, outside: Path) -> None:
    (local.workspace / "loop1").symlink_to("loop2")
    (local.workspace / "loop2").symlink_to("loop1")
    before = snapshot(outside)
    await assert_refused(local.read_file("loop1"), PathEscapeError, outside, before)
    await assert_refused(local.list_dir("loop1/x"), PathEscapeError, outside, before)


async def test_escape_proc_self_root(local: LocalSandbox, outside: Path) -> None:
    ws = local.workspace
    (ws / "root-link").symlink_to("/proc/self/root")
    (ws / "cwd-link").symlink_to("/proc/self/cwd")
    (ws / "fd-link").symlink_to("/proc/self/fd")
    before = snapshot(outside)
    target = str(outside / "secret.txt").lstrip("/")
    for attempt in (
        local.read_file(f"root-link/{target}"),
        local.read_file("cwd-link/x"),
        local.list_dir("fd-link"),
        local.write_file(f"root-link/{target}", "pwned"),
        local.read_file(f"/proc/self/root/{target}"),
    ):
        await assert_refused(attempt, PathEscapeError, outside, before)
    # As a relative path it is just a name inside the workspace, which does not exist.
    await assert_refused(
        local.read_file(f"proc/self/root/{target}"), NotFoundError, outside, before
    )


async def test_escape_symlink_swapped_between_check_and_use(
    local: LocalSandbox, outside: Path
) -> None:
    """A thread flips ``flip`` between a real directory and a symlink to outside."""
    ws = local.workspace
    real = ws / "flip-real"
    real.mkdir()
    (real / "secret.txt").write_text("inside\n")
    link = ws / "flip-link"
    link.symlink_to(outside)
    flip = ws / "flip"
    os.symlink("flip-real", ws / "flip")  # start as a harmless inside link
    before = snapshot(outside)
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            for source in ("flip-link", "flip-real"):
                tmp = ws / f".swap-{source}"
                os.symlink(source, tmp)
                os.replace(tmp, flip)

    thread = threading.Thread(target=swapper)
    thread.start()
    outcomes: set[str] = set()
    try:
        for i in range(300):
            try:
                outcomes.add(await local.read_file("flip/secret.txt"))
            except PathEscapeError:
                outcomes.add("refused")
            try:
                await local.write_file(f"flip/new-{i}.txt", "pwned")
                outcomes.add("wrote-inside")
            except PathEscapeError:
                outcomes.add("refused")
    finally:
        stop.set()
        thread.join()
    assert "top secret\n" not in outcomes
    assert "refused" in outcomes and outcomes <= {"inside\n", "refused", "wrote-inside"}
    assert snapshot(outside) == before


# -- hard links, special files, odd names ---------------------------------------------------


async def test_escape_hard_link_to_outside_file(local: LocalSandbox, outside: Path) -> None:
    original = snapshot(outside)
    os.link(outside / "secret.txt", local.workspace / "hard.txt")
    before = snapshot(outside)
    await assert_refused(local.write_file("hard.txt", "pwned"), PolicyError, outside, before)
    await assert_refused(local.edit("hard.txt", "top", "pwned"), PolicyError, outside, before)
    await local.remove("hard.txt")  # unlinking our name is fine; the outside file stays
    assert snapshot(outside) == original


async def test_escape_device_files_and_fifos(local: LocalSandbox, outside: Path) -> None:
    ws = local.workspace
    os.mkfifo(ws / "pipe")
    specials = ["pipe"]
    try:  # a character device like /dev/null; needs root outside a restricted container
        os.mknod(ws / "null-dev", 0o666 | 0o020000, os.makedev(1, 3))
        specials.append("null-dev")
    except PermissionError:
        pass
    (ws / "zero-link").symlink_to("/dev/zero")
    before = snapshot(outside)
    for name in specials:
        await assert_refused(local.read_file(name), SpecialFileError, outside, before)
        await assert_refused(local.write_file(name, "x"), SpecialFileError, outside, before)
    await assert_refused(local.read_bytes("zero-link"), PathEscapeError, outside, before)


@pytest.mark.parametrize(
    "name", ["new\nline.txt", "tab\there", "nul\x00byte", "bad-\udcff-utf8", "x/" * 2100]
)
async def test_escape_bad_names_are_invalid(local: LocalSandbox, outside: Path, name: str) -> None:
    before = snapshot(outside)
    await assert_refused(local.write_file(name, "x"), InvalidPathError, outside, before)
    await assert_refused(local.read_file(name), InvalidPathError, outside, before)
    assert sorted(os.listdir(local.workspace)) == ["hello.txt", "src"]


async def test_escape_odd_names_on_disk_are_listed_escaped_never_as_paths(
    local: LocalSandbox, outside: Path
) -> None:
    ws = os.fsencode(local.workspace)
    for raw in (b"evil\nname", b"bad-\xff-utf8"):
        with open(os.path.join(ws, raw), "wb") as handle:
            handle.write(b"secret in odd name\n")
    entries = [(e.name, e.addressable) for e in await local.list_dir(".")]
    assert entries == [
        ("bad-\\xff-utf8", False),
        ("evil\\x0aname", False),
        ("hello.txt", True),
        ("src", True),
    ]
    found = await local.search("secret in odd name")
    assert found == []
    assert sorted(found.odd_names) == ["bad-\\xff-utf8", "evil\\x0aname"]


async def test_escape_remove_root_and_through_links(local: LocalSandbox, outside: Path) -> None:
    (local.workspace / "out-link").symlink_to(outside)
    before = snapshot(outside)
    await assert_refused(local.remove("."), PolicyError, outside, before)
    await assert_refused(local.remove("out-link/secret.txt"), PathEscapeError, outside, before)
    await local.remove("out-link")  # removes the link itself, never the target
    assert snapshot(outside) == before and not (local.workspace / "out-link").is_symlink()


async def test_escape_search_does_not_follow_links_out(local: LocalSandbox, outside: Path) -> None:
    (local.workspace / "peek").symlink_to(outside)
    (local.workspace / "peek-file").symlink_to(outside / "secret.txt")
    assert await local.search("top secret") == []


# -- faults ----------------------------------------------------------------------------------


async def test_fault_huge_output_is_capped(workspace: Path) -> None:
    async with LocalSandbox(workspace, output_cap=100_000) as sandbox:
        result = await sandbox.run("head -c 50000000 /dev/zero; head -c 300000 /dev/zero >&2")
    assert result.ok and result.stdout_truncated and result.stderr_truncated
    assert len(result.stdout) == len(result.stderr) == 100_000


async def test_fault_never_exiting_command_is_killed(local: LocalSandbox) -> None:
    result = await local.run("trap '' TERM INT; while :; do :; done", timeout=0.5)
    assert result.timed_out and result.exit_code == 124


# -- docker: the container boundary ------------------------------------------------------------


@pytest.fixture(scope="module")
def docker_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    require_docker()
    base = tmp_path_factory.mktemp("escapes")
    ro = base / "readonly"
    ro.mkdir()
    (ro / "data.txt").write_text("read only\n")
    return make_workspace(base / "ws"), ro


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def jail(docker_setup: tuple[Path, Path]) -> AsyncIterator[DockerSandbox]:
    ws, ro = docker_setup
    async with DockerSandbox(
        ws, memory="256m", pids_limit=64, extra_mounts={ro: "/opt/ro"}, output_cap=100_000
    ) as sandbox:
        yield sandbox


@pytest.mark.docker
@pytest.mark.asyncio(loop_scope="module")
async def test_docker_escape_network_egress_is_off(jail: DockerSandbox) -> None:
    probe = (
        "import socket\n"
        "s = socket.socket(); s.settimeout(3)\n"
        "try:\n    s.connect(('1.1.1.1', 53)); print('CONNECTED')\n"
        "except OSError as e:\n    print('blocked', e)\n"
    )
    result = await jail.run(f'python3 -c "{probe}"; ls /sys/class/net')
    assert "blocked" in result.stdout and "CONNECTED" not in result.stdout
    assert result.stdout.split()[-1] == "lo"


@pytest.mark.docker
@pytest.mark.asyncio(loop_scope="module")
async def test_docker_escape_read_only_root_and_mounts(
    jail: DockerSandbox, docker_setup: tuple[Path, Path]
) -> None:
    _, ro = docker_setup
    before = snapshot(ro)
    for target in ("/etc/evil", "/usr/bin/evil", "/opt/ro/data.txt", "/opt/ro/new"):
        result = await jail.run(f"echo pwned > {target}")
        assert result.exit_code != 0 and "Read-only file system" in result.stderr
    assert (await jail.run("cat /opt/ro/data.txt")).stdout == "read only\n"
    assert (await jail.run("echo ok > /tmp/scratch && cat /tmp/scratch")).stdout == "ok\n"
    assert snapshot(ro) == before


@pytest.mark.docker
@pytest.mark.asyncio(loop_scope="module")
async def test_docker_escape_not_root_no_caps_no_new_privileges(jail: DockerSandbox) -> None:
    result = await jail.run("id -u; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status")
    lines = result.stdout.split("\n")
    assert lines[0] != "0"
    assert "CapEff:\t0000000000000000" in result.stdout
    assert "CapPrm:\t0000000000000000" in result.stdout
    assert "NoNewPrivs:\t1" in result.stdout
    denied = await jail.run("chown 0 /workspace/hello.txt")
    assert denied.exit_code != 0


@pytest.mark.docker
@pytest.mark.asyncio(loop_scope="module")
async def test_docker_escape_planted_symlink_to_host(jail: DockerSandbox) -> None:
    assert (await jail.run("ln -sf /etc/shadow shadow && ln -sfn / rootdir")).ok
    for path in ("shadow", "rootdir/etc/passwd"):
        with pytest.raises(PathEscapeError):
            await jail.read_file(path)
    with pytest.raises(PathEscapeError):
        await jail.write_file("rootdir/tmp/pwned", "x")
    assert not Path("/tmp/pwned").exists()


@pytest.mark.docker
@pytest.mark.asyncio(loop_scope="module")
async def test_docker_fault_huge_output_is_capped(jail: DockerSandbox) -> None:
    result = await jail.run("head -c 20000000 /dev/zero")
    assert result.ok and result.stdout_truncated and len(result.stdout) == 100_000


@pytest.mark.docker
@pytest.mark.asyncio(loop_scope="module")
async def test_docker_fault_memory_hog_is_bounded(jail: DockerSandbox) -> None:
    hog = await jail.run("python3 -c 'x = bytearray(1024 * 1024 * 1024); print(len(x))'")
    assert hog.exit_code != 0 and "1073741824" not in hog.stdout
    assert (await jail.run("echo alive")).stdout == "alive\n"


@pytest.mark.docker
@pytest.mark.asyncio(loop_scope="module")
async def test_docker_fault_fork_bomb_is_bounded(jail: DockerSandbox) -> None:
    bomb = await jail.run("bomb() { bomb | bomb & }; bomb; sleep 2", timeout=10)
    assert "Cannot fork" in bomb.stderr or bomb.timed_out  # the pids cap stopped it
    for _ in range(50):  # the group kill races the last forks; the pids cap bounds them
        if (await jail.run("echo alive")).stdout == "alive\n":
            break
        await asyncio.sleep(0.2)
    count = await jail.run("ps -e --no-headers | wc -l")
    assert int(count.stdout) < 10


async def test_escape_workspace_root_swapped_for_a_link(local: LocalSandbox, outside: Path) -> None:
    ws = local.workspace
    ws.rename(ws.with_name("ws-moved"))
    ws.symlink_to(outside)
    before = snapshot(outside)
    await assert_refused(local.read_file("secret.txt"), PathEscapeError, outside, before)
    await assert_refused(local.write_file("secret.txt", "x"), PathEscapeError, outside, before)


@pytest.mark.parametrize(
    "attempt",
    [
        lambda s: s.run("echo \x00 nul"),
        lambda s: s.run("echo \udcff"),
        lambda s: s.run("x" * 3_000_000),
        lambda s: s.run("true", env={"BAD=NAME": "x"}),
        lambda s: s.write_file("text.txt", "lone \udcff surrogate"),
        lambda s: s.edit("hello.txt", "hello", "\udcff"),
        lambda s: s.search("(", path="."),
    ],
    ids=["nul", "surrogate", "too-long", "env-name", "write-surrogate", "edit-surrogate", "regex"],
)
async def test_fault_bad_input_gets_a_typed_error(
    local: LocalSandbox, outside: Path, attempt: Attempt
) -> None:
    before = snapshot(outside)
    await assert_refused(attempt(local), SandboxError, outside, before)
    assert (local.workspace / "hello.txt").read_text() == "hello world\n"
    assert not (local.workspace / "text.txt").exists()


@pytest.mark.parametrize(
    "target", ["relative/dir", "/", "/workspace", "/workspace/sub", "/tmp/cache", "/opt/../etc"]
)
async def test_escape_extra_mount_targets_are_checked(outside: Path, target: str) -> None:
    before = snapshot(outside)
    with pytest.raises(PolicyError):
        DockerSandbox(outside.parent, extra_mounts={outside: target})
    assert snapshot(outside) == before

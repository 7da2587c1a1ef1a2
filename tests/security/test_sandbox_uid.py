"""Row 11 of issue 13: the docker tier never runs as root, and no set-id file reaches the tree.

A workspace owned by root (CI, containers) used to make the container run as uid 0, and a
``chmod 4755`` left a setuid-root program in the user's tree. Now commands run as an
unprivileged uid; set-id bits are cleared from whatever the sandbox changed, by the file
tools, on close, and by every review apply.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from driveros.review import ScratchWorkspace
from driveros.sandbox import DockerSandbox, LocalSandbox, PolicyError
from tests.sandbox.conftest import require_docker

SETID = stat.S_ISUID | stat.S_ISGID


def root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("a root-owned workspace needs the tests to run as root (CI does)")


def root_owned_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(base)}
    (repo / "app.py").write_text("print('hi')\n")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)
    (repo / "pub").mkdir()
    (repo / "pub").chmod(0o777)  # a world-writable corner of the user's tree
    (repo / "suid-tool").write_bytes(b"#!/bin/sh\necho tool\n")
    (repo / "suid-tool").chmod(0o4755)  # a set-id file the user has on purpose
    return repo


def setid_files(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        info = path.lstat()
        if stat.S_ISREG(info.st_mode) and info.st_mode & SETID:
            found.append(str(path.relative_to(root)))
    return sorted(found)


@pytest.mark.docker
async def test_sandbox_uid_docker_never_root_and_no_setid(tmp_path: Path) -> None:
    require_docker()
    root_only()
    repo = root_owned_repo(tmp_path)
    async with DockerSandbox(repo) as box:
        assert box.user == "65532:65532"
        ident = await box.run("id -u; id -g")
        assert ident.stdout.split() == ["65532", "65532"], ident
        planted = await box.run("cp /bin/sh pub/rootsh && chmod 4755 pub/rootsh && ls -l pub")
        assert planted.exit_code == 0, planted
        # the file tools replace the user's set-id file: content changes, the bit goes
        await box.write_file("suid-tool", "#!/bin/sh\necho agent\n")
        assert not (repo / "suid-tool").stat().st_mode & SETID
    # closing cleared what the container set; nothing of it is root's
    assert setid_files(repo) == []
    assert (repo / "pub" / "rootsh").stat().st_uid == 65532
    with pytest.raises(PolicyError):
        DockerSandbox(repo, user="0:0")


@pytest.mark.docker
async def test_sandbox_uid_docker_review_copy_writable_and_apply_strips(tmp_path: Path) -> None:
    require_docker()
    root_only()
    repo = root_owned_repo(tmp_path)
    # As the docker tier asks for it: a root-owned workspace gets a worktree, not a view.
    async with await ScratchWorkspace.create(repo, base_dir=tmp_path, container="runc") as scratch:
        assert scratch.strategy == "worktree"
        async with DockerSandbox(scratch.path, private_copy=True) as box:
            assert (await box.run("id -u")).stdout.strip() == "65532"
            made = await box.run(
                "echo new > made.txt && cp /bin/sh rootsh && chmod 4755 rootsh "
                "&& echo more >> app.py && echo 'echo agent' >> suid-tool"
            )
            assert made.exit_code == 0, made
            # root's own files stay root's: the container cannot chmod them
            assert (await box.run("chmod 6755 app.py")).exit_code != 0
            # what the (host-side) file tools create stays writable for the container
            await box.write_file("pkg/new/mod.py", "x = 1\n")
            more = await box.run("echo 'y = 2' >> pkg/new/mod.py && touch pkg/new/other.py")
            assert more.exit_code == 0, more
        # whatever leaves a set-id bit in the copy, no review action carries it over
        (scratch.path / "rootsh").chmod(0o4755)
        (scratch.path / "app.py").chmod(0o6755)
        changes = await scratch.changes()
        assert {c.path for c in changes} >= {"made.txt", "rootsh", "app.py", "suid-tool"}
        await scratch.apply()
    assert (repo / "made.txt").read_text() == "new\n"
    assert (repo / "pkg" / "new" / "mod.py").read_text() == "x = 1\ny = 2\n"
    # the user's own set-id file got the agent's content, so it lost the bit
    assert (repo / "suid-tool").read_text().endswith("echo agent\n")
    assert (repo / "rootsh").exists()
    assert setid_files(repo) == []
    assert (repo / "rootsh").stat().st_uid == 0  # written by driveros, not by the container


async def test_sandbox_uid_local_strips_setid_on_close(tmp_path: Path) -> None:
    repo = root_owned_repo(tmp_path) if os.geteuid() == 0 else tmp_path
    before = setid_files(repo)
    async with LocalSandbox(repo) as box:
        result = await box.run("cp /bin/sh planted && chmod 4755 planted && chmod 2755 pub")
        assert result.exit_code == 0, result
        assert (repo / "planted").stat().st_mode & stat.S_ISUID
    assert not (repo / "planted").stat().st_mode & SETID
    assert setid_files(repo) == before  # a set-id file the user had untouched stays


async def test_sandbox_uid_a_view_is_swept_through_its_written_layer(tmp_path: Path) -> None:
    """On an overlay view the sweep at close looks only at what the run wrote (the upper
    layer), not the whole tree (0.4-1.6 s per run at 100k files): what the run made or
    chmodded set-id is cleared, the user's own set-id file and one the user makes in their
    own tree meanwhile are left alone."""
    root_only()
    repo = root_owned_repo(tmp_path)
    async with await ScratchWorkspace.create(repo, strategy="overlay") as scratch:
        assert scratch.strategy == "overlay" and scratch.written_layer is not None
        async with LocalSandbox(scratch.path, written_in=scratch.written_layer) as box:
            made = await box.run(
                "cp /bin/sh planted && chmod 4755 planted && chmod 2755 app.py && chmod 2777 pub"
            )
            assert made.exit_code == 0, made
            mine = repo / "pub" / "users-own"  # the user, in their tree, during the run
            mine.write_bytes(b"x")
            mine.chmod(0o4755)
        assert setid_files(scratch.path) == ["pub/users-own", "suid-tool"]
    assert setid_files(repo) == ["pub/users-own", "suid-tool"]

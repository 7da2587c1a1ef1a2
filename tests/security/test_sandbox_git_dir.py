"""Row 5 of issue 13: ``.git`` is never the agent's, in any tier or mode.

A hostile model writes a pre-commit hook or a ``core.fsmonitor`` into the repository's git
directory, under any spelling that some filesystem folds to ``.git``, directly or through a
symlink; the user's next ``git status``/``git commit`` must not run it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from driveros.review import ScratchWorkspace
from driveros.sandbox import DockerSandbox, LocalSandbox, PolicyError, Sandbox, SandboxError
from tests.sandbox.conftest import SANDBOX_UID, require_docker

HOOK = "#!/bin/sh\ntouch {marker}\n"

#: Every spelling of a path into the git directory the model may try.
GIT_PATHS = [
    ".git/hooks/pre-commit",
    ".GIT/hooks/pre-commit",
    ".Git/config",
    "./.git/config",
    ".git./hooks/pre-commit",
    ".git /hooks/pre-commit",
    ".g\u200cit/hooks/pre-commit",
    "GIT~1/hooks/pre-commit",
    ".git::$INDEX_ALLOCATION/hooks/pre-commit",
    "sub/.git/hooks/pre-commit",
    "gitdir/hooks/pre-commit",  # a symlink to .git
    "hooks-link/pre-commit",  # a symlink to .git/hooks
    "cfg-link",  # a symlink to .git/config
]


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo.parent)}
    return subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )


def hostile_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "app.py").write_text("print('hi')\n")
    git(repo, "add", "-A")
    git(
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "init",
    )
    (repo / "sub").mkdir()
    (repo / "gitdir").symlink_to(".git")
    (repo / "hooks-link").symlink_to(".git/hooks")
    (repo / "cfg-link").symlink_to(".git/config")
    return repo


def assert_git_untouched(repo: Path, before: dict[str, bytes], marker: Path) -> None:
    after = {str(p): p.read_bytes() for p in (repo / ".git").rglob("*") if p.is_file()}
    changed = {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)}
    # git itself may refresh its index on status; nothing else in .git may change.
    assert changed <= {str(repo / ".git" / "index")}, changed
    assert not (repo / ".GIT").exists() or not any((repo / ".GIT").rglob("*"))
    git(repo, "status")
    git(
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    assert not marker.exists(), "a hook or fsmonitor planted by the agent ran"


async def attack(sandbox: Sandbox, marker: Path) -> None:
    for path in GIT_PATHS:
        # A final symlink is refused for writes anyway; everything else for being .git.
        refused = SandboxError if path == "cfg-link" else PolicyError
        with pytest.raises(refused, match=r"\.git|symlink"):
            await sandbox.write_file(path, HOOK.format(marker=marker))
        with pytest.raises(refused, match=r"\.git|symlink"):
            await sandbox.edit(path, "[core]", "[core]\n\tfsmonitor = touch " + str(marker))
        with pytest.raises(PolicyError, match=r"\.git"):
            await sandbox.read_file(path)
        if path != "cfg-link":  # removing the link itself is fine
            with pytest.raises(PolicyError, match=r"\.git"):
                await sandbox.remove(path)
    for directory in (".git", ".GIT", "gitdir", "hooks-link", ".git/hooks"):
        with pytest.raises(PolicyError, match=r"\.git"):
            await sandbox.list_dir(directory)
        with pytest.raises(PolicyError, match=r"\.git"):
            await sandbox.search("fsmonitor", path=directory)
    # a whole-workspace search never reports anything from inside .git
    assert not [m for m in await sandbox.search("repositoryformatversion") if ".git" in m.path]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return hostile_repo(tmp_path)


def snapshot_git(repo: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (repo / ".git").rglob("*") if p.is_file()}


async def test_sandbox_git_dir_refused_local(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    before = snapshot_git(repo)
    async with LocalSandbox(repo) as sandbox:
        await attack(sandbox, marker)
    assert_git_untouched(repo, before, marker)


async def test_sandbox_git_dir_refused_local_review(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    before = snapshot_git(repo)
    async with (
        await ScratchWorkspace.create(repo, base_dir=tmp_path) as scratch,
        LocalSandbox(scratch.path) as sandbox,
    ):
        for path in GIT_PATHS[:10]:
            with pytest.raises(PolicyError, match=r"\.git"):
                await sandbox.write_file(path, HOOK.format(marker=marker))
            with pytest.raises(PolicyError, match=r"\.git"):
                await sandbox.read_file(path)
    assert_git_untouched(repo, before, marker)


@pytest.fixture
def docker_repo(tmp_path: Path) -> Path:
    require_docker()
    repo = hostile_repo(tmp_path)
    (repo / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    (repo / "vendor" / "lib" / ".git").mkdir(parents=True)
    (repo / "vendor" / "lib" / ".git" / "config").write_text("[core]\n")
    if os.geteuid() == 0:
        for path in [repo, *repo.rglob("*")]:
            os.chown(path, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    return repo


@pytest.fixture
async def docker_box(docker_repo: Path) -> AsyncIterator[DockerSandbox]:
    async with DockerSandbox(docker_repo) as sandbox:
        yield sandbox


@pytest.mark.docker
async def test_sandbox_git_dir_refused_docker(
    docker_repo: Path, docker_box: DockerSandbox, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    before = snapshot_git(docker_repo)
    await attack(docker_box, marker)
    # Commands cannot be fenced by path; the container's view of .git is read-only instead.
    hook = f"printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit"
    for command in (
        hook,
        "chmod +x .git/hooks/pre-commit",
        "git config core.fsmonitor 'touch /workspace/pwned'",
        "touch .git/new-file",
        "rm -f .git/HEAD",
        "mv .git .git-moved",
    ):
        result = await docker_box.run(command)
        assert result.exit_code != 0, (command, result)
    check = await docker_box.run("test -w /workspace/.git || echo read-only")
    assert check.stdout.strip() == "read-only"
    # a nested repository's (or submodule's) .git is read-only too: it cannot be repointed
    for command in (
        "echo 'gitdir: /workspace/evil' > sub/.git",
        "echo x > vendor/lib/.git/config",
        "rm -rf vendor/lib/.git",
    ):
        result = await docker_box.run(command)
        assert result.exit_code != 0, (command, result)
    assert (docker_repo / "sub" / ".git").read_text() == "gitdir: ../.git/modules/sub\n"
    assert (docker_repo / "vendor" / "lib" / ".git" / "config").read_text() == "[core]\n"
    assert_git_untouched(docker_repo, before, marker)
    assert not (docker_repo / "pwned").exists()
    assert not (docker_repo / ".git-moved").exists()


@pytest.mark.docker
async def test_sandbox_git_dir_refused_docker_review(tmp_path: Path) -> None:
    require_docker()
    repo = hostile_repo(tmp_path)  # ours while the scratch worktree is made
    marker = tmp_path / "pwned"
    before = snapshot_git(repo)
    async with await ScratchWorkspace.create(
        repo, base_dir=tmp_path, strategy="worktree"
    ) as scratch:  # a view's .git: tests/review/test_overlay_security.py
        assert (scratch.path / ".git").is_file()  # a worktree: .git points into the repo
        if os.geteuid() == 0:
            for path in [scratch.path, *scratch.path.rglob("*")]:
                os.chown(path, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
        async with DockerSandbox(scratch.path) as sandbox:
            for path in GIT_PATHS[:10]:
                with pytest.raises(PolicyError, match=r"\.git"):
                    await sandbox.write_file(path, HOOK.format(marker=marker))
            for command in ("echo 'gitdir: /tmp/evil' > .git", "rm -f .git", "mv .git x"):
                result = await sandbox.run(command)
                assert result.exit_code != 0, (command, result)
        assert (scratch.path / ".git").read_text().startswith("gitdir: " + str(repo))
    assert_git_untouched(repo, before, marker)

"""The allowlist (outside a contained tier) and the run's added folders (``--add-dir``): a
read-only folder is readable by the reading commands as the workspace is, a writable one
reachable by every allowlisted command; nothing else widens (a path outside every folder,
``..``, a look-alike prefix, ``.git``, secret files, links between the roots)."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.approval import (
    ApprovalRequest,
    FolderAccess,
    PolicyApproval,
    Tier,
    classify_command,
)

WS, RO, RW = "/home/me/ws", "/home/me/lib", "/home/me/app"
FOLDERS = [FolderAccess(path=RO), FolderAccess(path=RW, writable=True)]

ALLOWED = [
    f"cat {RO}/util.py",
    f"ls -la {RO}",
    f"grep -rn helper {RO}/src",
    f"rg helper {RO}",
    f"find {RO} -name '*.py'",
    f"head -n 5 {RO}/util.py; wc -l {RO}/util.py",
    f"cd {RO} && cat util.py",
    f"git diff -- {RO}/util.py",
    f"timeout 5 cat {RO}/util.py",
    f"cat < {RO}/util.py",
    f"cat {RW}/main.py",
    f"pytest -q {RW}/tests",
    f"python -m pytest {RW}/tests/test_main.py",
    f"cd {RW} && pytest -q",
    f"PYTHONPATH={RW}/src pytest {RW}/tests",
    f"ruff check {RW}",
    f"cat {RO}/src/*.py",
]

REFUSED = [
    # not an added folder
    ("cat /home/me/other/x.py", "outside the workspace"),
    (f"cat {RO}x/util.py", "outside the workspace"),  # a look-alike prefix
    ("cat /etc/passwd", "outside the workspace"),
    (f"cat {RO}/../other/x", "reaches outside"),
    (f"cd {RO} && cat ../other/x", "reaches outside"),
    (f"cat {RO}/.git/config", "git's own directory"),
    (f"cat {RW}/.env", "secret file"),
    (f"cat {RO}/*", "secret file"),
    # a read-only folder is for reading: no runner or checker works there
    (f"pytest {RO}/tests", "read-only added folder"),
    (f"python3 -m pytest {RO}", "read-only added folder"),
    (f"cd {RO} && pytest", "read-only added folder"),
    (f"timeout 9 pytest {RO}", "read-only added folder"),
    (f"PYTHONPATH={RO} pytest", "read-only added folder"),
    (f"ruff check --config={RO}/ruff.toml", "read-only added folder"),
    (f".venv/bin/pytest --rootdir={RO}", "read-only added folder"),
    # what the workspace may not do, no folder may either
    (f"echo x > {RW}/main.py", "redirection writes to a file"),
    (f"rm {RW}/main.py", "not on the allowlist"),
    (f"cd {RW} && git status", "git after `cd`"),
]


@pytest.mark.parametrize("command", ALLOWED)
def test_allowlist_reaches_added_folders(command: str) -> None:
    decision = classify_command(command, workspace=WS, folders=FOLDERS)
    assert decision.allowed, decision.reason


@pytest.mark.parametrize(("command", "reason"), REFUSED)
def test_allowlist_widens_nothing_else(command: str, reason: str) -> None:
    decision = classify_command(command, workspace=WS, folders=FOLDERS)
    assert not decision.allowed, command
    assert reason in decision.reason, decision.reason


@pytest.mark.parametrize("command", [f"cat {RO}/util.py", f"pytest {RW}/tests"])
def test_allowlist_without_the_folders_refuses_their_paths(command: str) -> None:
    decision = classify_command(command, workspace=WS)
    assert not decision.allowed and "outside the workspace" in decision.reason


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """A workspace, a read-only and a writable folder, and an outside directory, with links:
    ro/out -> outside, ro/inner -> ro/src (stays inside), ws/lib -> ro, rw/ws -> ws."""
    ws, ro, rw, out = (tmp_path / n for n in ("ws", "ro", "rw", "outside"))
    for d in (ws, ro / "src", rw, out):
        d.mkdir(parents=True)
    (out / "secret.txt").write_text("outside\n")
    (ro / "src" / "util.py").write_text("x = 1\n")
    (ws / "main.py").write_text("y = 2\n")
    (ro / "out").symlink_to(out)
    (ro / "inner").symlink_to("src")
    (ws / "lib").symlink_to(ro)
    (rw / "ws").symlink_to(ws)
    return ws, ro, rw, out


@pytest.mark.parametrize(
    "command",
    [
        "cat {ro}/out/secret.txt",
        "cat {ro}/*/secret.txt",
        "cd {ro} && cat out/secret.txt",
        "grep -r x {ro}/out",
        "cat lib/src/util.py",  # the workspace's link into a folder leaves the workspace
        "cat {rw}/ws/main.py",  # a folder's link into the workspace leaves the folder
    ],
)
async def test_local_tier_refuses_a_folder_path_through_a_symlink(
    roots: tuple[Path, Path, Path, Path], command: str
) -> None:
    ws, ro, rw, _out = roots
    folders = [FolderAccess(path=str(ro)), FolderAccess(path=str(rw), writable=True)]
    policy = PolicyApproval(workspace=ws, tier=Tier(sandbox="local"), folders=folders)
    shown = command.format(ro=ro, rw=rw)
    decision = await policy.decide(ApprovalRequest(tool="run", command=shown))
    assert not decision.allowed, shown
    assert "through a symlink" in decision.reason, decision.reason
    inside = await policy.decide(
        ApprovalRequest(tool="run", command=f"cat {ro}/inner/util.py {ro}/src/*.py main.py")
    )
    assert inside.allowed, inside.reason


async def test_local_tier_resolves_a_writable_folder_in_its_view(
    roots: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    """A review run's folder: commands name it at its path, its files are in the view; a link
    planted in the view is judged there (not in the user's copy, which has none)."""
    ws, _ro, rw, out = roots
    view = tmp_path / "view"
    view.mkdir()
    (view / "planted").symlink_to(out)
    (rw / "planted").mkdir()  # the user's copy: a plain directory
    folder = FolderAccess(path=str(rw), writable=True, files=str(view))
    policy = PolicyApproval(
        workspace=ws, tier=Tier(sandbox="local", scratch=True, network=True), folders=[folder]
    )
    decision = await policy.decide(
        ApprovalRequest(tool="run", command=f"cat {rw}/planted/secret.txt")
    )
    assert not decision.allowed and "through a symlink" in decision.reason, decision.reason

"""The project's environments are seen from scratch copies (linked into a worktree or copy,
read-only through an overlay view), never proposed or applied. Each test runs per strategy."""

from __future__ import annotations

import os
from pathlib import Path

from driveros.review import ENVIRONMENT_DIRS, ScratchWorkspace
from tests.review._repo import git, make_repo, tree, write_files


def _environments(root: Path) -> None:
    """A fake virtualenv, a node_modules and an ``env`` directory that is no virtualenv."""
    write_files(
        root,
        {
            ".venv/pyvenv.cfg": "home = /usr/bin\n",
            ".venv/bin/tool": "#!/bin/sh\necho venv-tool\n",
            "node_modules/left-pad/index.js": "module.exports = 1;\n",
            "env/settings.txt": "not a virtualenv\n",
        },
    )
    (root / ".venv/bin/tool").chmod(0o755)


def test_environment_dirs_documented_list() -> None:
    assert ENVIRONMENT_DIRS == (".venv", "venv", "env", "node_modules")


async def test_environments_linked_into_worktree_and_never_reported(
    tmp_path: Path, scratch_base: Path, scratch_strategy: str
) -> None:
    repo = make_repo(
        tmp_path / "proj",
        {".gitignore": ".venv/\nnode_modules/\nenv/\n", "app.py": "X = 1\n"},
    )
    _environments(repo)
    before = tree(repo)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        assert scratch.environments == (".venv", "node_modules")
        venv = scratch.path / ".venv"
        if scratch_strategy == "overlay":  # seen through the view, writes stay in it
            assert not venv.is_symlink() and venv.is_dir()
            (venv / "bin/tool").write_text("#!/bin/sh\necho planted\n")
        else:
            assert venv.is_symlink() and venv.resolve() == (repo / ".venv").resolve()
            assert (venv / "bin/tool").read_text().endswith("echo venv-tool\n")
        # No pyvenv.cfg: not an environment, an ignored directory (neither linked nor seen).
        assert not os.path.lexists(scratch.path / "env")
        assert (scratch.path / "node_modules/left-pad/index.js").is_file()
        assert await scratch.changes() == []
        (scratch.path / "app.py").write_text("X = 2\n")
        changes = await scratch.changes()
        assert [c.path for c in changes] == ["app.py"]
        result = await scratch.commit("agent: X = 2")
        assert result.applied == ["app.py"]
        assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["app.py"]
    # Closing removed the links or the view only: the user's environments are untouched.
    after = tree(repo)
    assert {k: v for k, v in after.items() if k != "app.py"} == {
        k: v for k, v in before.items() if k != "app.py"
    }
    assert list(scratch_base.iterdir()) == []


async def test_environments_linked_into_plain_copy_and_never_applied(
    tmp_path: Path, scratch_base: Path
) -> None:
    ws = tmp_path / "plain"
    write_files(ws, {".gitignore": "venv/\n", "main.py": "print(1)\n"})
    _environments(ws)
    write_files(ws, {"venv/pyvenv.cfg": "home = /usr/bin\n", "venv/bin/tool": "#!/bin/sh\n"})
    before = tree(ws)
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        assert scratch.environments == (".venv", "venv", "node_modules")
        assert (scratch.path / "venv/bin/tool").is_file()
        (scratch.path / "main.py").write_text("print(2)\n")
        assert [c.path for c in await scratch.changes()] == ["main.py"]
        assert (await scratch.apply()).applied == ["main.py"]
    assert tree(ws) == before | {"main.py": b"print(2)\n"}


async def test_environments_of_a_subdirectory_workspace(tmp_path: Path, scratch_base: Path) -> None:
    repo = make_repo(
        tmp_path / "mono",
        {".gitignore": ".venv\nnode_modules\n", "pkg/mod.py": "Y = 1\n"},
    )
    _environments(repo / "pkg")
    async with await ScratchWorkspace.create(repo / "pkg", base_dir=scratch_base) as scratch:
        assert scratch.environments == (".venv", "node_modules")
        assert (scratch.path / ".venv/pyvenv.cfg").is_file()
        assert await scratch.changes() == []


async def test_tracked_node_modules_is_copied_not_linked(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = make_repo(tmp_path / "vendored", {"node_modules/dep/index.js": "exports.a = 1;\n"})
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        assert scratch.environments == ()  # tracked: source, not an environment
        copied = scratch.path / "node_modules"
        assert copied.is_dir() and not copied.is_symlink()
        (copied / "dep/index.js").write_text("exports.a = 2;\n")
        assert [c.path for c in await scratch.changes()] == ["node_modules/dep/index.js"]

"""The workspace index: one find listing, or a list_dir/stat walk where find is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driveros.intel._scan import FileIndex
from driveros.sandbox import LocalSandbox
from tests.intel._projects import tool_env, write_project

FILES = {
    "a.py": "x = 1\n",
    "pkg/b.py": "y = 2\n",
    "odd name\twith tab.txt": "tab\n",
    ".hidden/c.py": "skipped\n",
    "node_modules/d.js": "skipped\n",
    "pkg/__pycache__/b.pyc": "skipped\n",
    ".driveros.toml": "# dotfiles are files, kept\n",
}


@pytest.mark.parametrize("path_env", ["tools", "no-find"])
async def test_file_index_lists_hashes_and_notices_changes(tmp_path: Path, path_env: str) -> None:
    root = write_project(tmp_path / "ws", FILES)
    env = tool_env() if path_env == "tools" else {"PATH": str(tmp_path / "empty")}
    async with LocalSandbox(root, base_env=env) as sandbox:
        index = FileIndex(sandbox, exclude=("*.txt",))
        first = await index.refresh()
        assert sorted(first) == [".driveros.toml", "a.py", "pkg/b.py"]
        assert index.method == ("find" if path_env == "tools" else "walk")
        assert first == await index.refresh()

        (root / "a.py").write_text("x = 2\n")  # same size: caught by mtime or the hint
        second = await index.refresh(changed=["./a.py"])
        assert second["a.py"] != first["a.py"] and second["pkg/b.py"] == first["pkg/b.py"]

        (root / "pkg" / "b.py").unlink()
        (root / "pkg" / "new.py").write_text("z = 3\n")
        third = await index.refresh()
    assert sorted(third) == [".driveros.toml", "a.py", "pkg/new.py"]


async def test_the_walk_leaves_out_names_no_path_reaches(tmp_path: Path) -> None:
    """list_dir shows a non-UTF-8 name escaped (``bad\\xff.py``); the index never takes that
    escape for a path (it could name another file, or none)."""
    root = write_project(tmp_path / "ws", {"a.py": "x = 1\n"})
    (Path(root) / "bad\\xff.py").write_text("a real file named with a backslash\n")
    fd = os.open(os.fsencode(root) + b"/bad\xff.py", os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    async with LocalSandbox(root, base_env={"PATH": str(tmp_path / "empty")}) as sandbox:
        index = FileIndex(sandbox)
        listed = await index.refresh()
    assert index.method == "walk"
    assert sorted(listed) == ["a.py", "bad\\xff.py"]  # the literal backslash name only

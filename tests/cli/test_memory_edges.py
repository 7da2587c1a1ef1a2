"""``driveros memory`` on a workspace that has no memory yet, and imports that fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driveros.cli._main import main

Cap = pytest.CaptureFixture[str]
DB = ".agent-memory.db"


def memory(capsys: Cap, ws: Path, *args: str) -> tuple[int, str, str]:
    code = main(["memory", *args, "--workspace", str(ws)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize("action", [["list"], ["search", "anything"], ["stats"]])
def test_memory_read_actions_on_a_fresh_workspace_exit_0(
    tmp_path: Path, capsys: Cap, action: list[str]
) -> None:
    code, out, err = memory(capsys, tmp_path, *action)
    assert code == 0 and "nothing remembered yet" in err
    code, out, _ = memory(capsys, tmp_path, *action, "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data == [] or data["active"] == 0
    assert not (tmp_path / DB).exists()


def test_memory_export_without_a_database_writes_an_importable_file(
    tmp_path: Path, capsys: Cap
) -> None:
    target = tmp_path / "memory.json"
    code, _, err = memory(capsys, tmp_path, "export", "-o", str(target))
    assert code == 0 and "exported 0 facts" in err
    assert json.loads(target.read_text())["facts"] == []
    other = tmp_path / "other"
    other.mkdir()
    code, out, _ = memory(capsys, other, "import", str(target))
    assert (code, out) == (0, "imported 0 facts\n")
    (tmp_path / "empty.json").write_text("[]")
    code, out, _ = memory(capsys, other, "import", str(tmp_path / "empty.json"))
    assert (code, out) == (0, "imported 0 facts\n")


@pytest.mark.parametrize("content", [None, "not json", '{"facts": 3}'])
def test_memory_import_of_a_bad_file_creates_no_database(
    tmp_path: Path, capsys: Cap, content: str | None
) -> None:
    source = tmp_path / "in.json"
    if content is not None:
        source.write_text(content)
    code, _, err = memory(capsys, tmp_path, "import", str(source))
    assert code == 1 and str(source) in err
    assert not (tmp_path / DB).exists()

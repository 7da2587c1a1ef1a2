"""The core entry point of more than one folder, as the language server uses it:
``RunSpec.add_dirs`` holds :class:`AddedDir` entries; a review run with a writable one hands
its view back in ``RunReport.folders`` and its changes (absolute paths) in ``changes``; the
caller applies with :func:`apply_together` (checked together) or discards."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests._scripted import FIX_CALC

from driveros.review import ConflictError, apply_together
from driveros.runs import AddedDir, RunSpec
from driveros.testing import ToolCallSpec, Turn

from .conftest import run_scripted


def test_added_dir_a_bare_path_is_a_read_only_folder(tmp_path: Path) -> None:
    spec = RunSpec(task="t", workspace=tmp_path, add_dirs=[tmp_path / "a", str(tmp_path / "b")])
    assert spec.add_dirs == [AddedDir(path=tmp_path / "a"), AddedDir(path=tmp_path / "b")]
    assert not any(a.writable for a in spec.add_dirs)
    again = RunSpec.model_validate_json(
        RunSpec(
            task="t", workspace=tmp_path, add_dirs=[AddedDir(path=tmp_path, writable=True)]
        ).model_dump_json()
    )
    assert again.add_dirs == [AddedDir(path=tmp_path, writable=True)]


async def test_added_dir_writable_review_run_reports_the_folder_and_applies_together(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "lib.py").write_text("x = 1\n")
    edit = ToolCallSpec(
        "edit_file", {"path": f"{other}/lib.py", "old_string": "x = 1", "new_string": "x = 2"}
    )
    out = await run_scripted(
        [Turn(tool_calls=[FIX_CALC, edit]), Turn(text="done")],
        calc_repo,
        review=True,
        add_dirs=[AddedDir(path=other, writable=True)],
    )
    report = out.report
    assert report.scratch is not None and report.folders is not None
    try:
        assert [c.path for c in report.changes] == ["calc.py", f"{other}/lib.py"]
        assert list(report.folders.roots) == [other]
        assert (other / "lib.py").read_text() == "x = 1\n"  # nothing written yet
        (checkpoint,) = out.of("checkpoint")
        assert checkpoint.files == ["calc.py", f"{other}/lib.py"]
        (other / "lib.py").write_text("x = 3\n")  # the user's edit meanwhile
        with pytest.raises(ConflictError) as caught:
            await apply_together(report.scratch, report.folders)
        assert [c.path for c in caught.value.conflicts] == [f"{other}/lib.py"]
        assert caught.value.clean == ["calc.py"]
        assert (calc_repo / "calc.py").read_text().endswith("a - b\n")  # nothing anywhere
        done = await apply_together(report.scratch, report.folders, caught.value.clean)
        assert done.applied == ["calc.py"]
        assert (calc_repo / "calc.py").read_text().endswith("a + b\n")
        assert (other / "lib.py").read_text() == "x = 3\n"
    finally:
        await report.scratch.aclose()
        await report.folders.aclose()

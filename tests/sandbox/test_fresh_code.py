"""Commands never run stale Python bytecode after an edit (PYTHONDONTWRITEBYTECODE)."""

from __future__ import annotations

from pathlib import Path

from driveros.sandbox import LocalSandbox


async def test_same_size_edit_in_the_same_second_is_seen_by_the_next_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    probe = "python3 -c 'import calc; print(calc.add(2, 3))'"
    async with LocalSandbox(tmp_path) as sandbox:
        first = await sandbox.run(probe)
        assert first.stdout.strip() == "-1"
        # same size, immediately after the import: the case a bytecode cache gets wrong
        await sandbox.edit("calc.py", "a - b", "a + b")
        second = await sandbox.run(probe)
    assert second.stdout.strip() == "5", second.stderr
    assert not (tmp_path / "__pycache__").exists()

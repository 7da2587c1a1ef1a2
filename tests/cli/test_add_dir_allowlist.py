"""``driveros agent --add-dir DIR[:rw] --approve policy`` on the user's tree (no ``--review``,
so the allowlist decides): reading commands read a read-only folder, the runners work in a
writable one, and the rest stays refused."""

from __future__ import annotations

from pathlib import Path

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import run_ndjson


def _run(command: str) -> ToolCallSpec:
    return ToolCallSpec("run", {"command": command})


async def test_allowlist_reads_and_tests_added_folders(calc_repo: Path, tmp_path: Path) -> None:
    ro, rw = tmp_path / "lib", tmp_path / "app"
    ro.mkdir()
    rw.mkdir()
    (ro / "util.py").write_text("HELPER = 'from the read-only folder'\n")
    (rw / "test_app.py").write_text("def test_app():\n    assert 1 + 1 == 2\n")
    turns = [
        Turn(tool_calls=[_run(f"cat {ro}/util.py")]),
        Turn(tool_calls=[_run(f"python3 -m pytest -q -p no:cacheprovider {rw}")]),
        Turn(tool_calls=[_run(f"python3 -m pytest -q {ro}")]),
        Turn(tool_calls=[_run(f"cat {tmp_path}/repo/../lib/util.py")]),
        Turn(text="read and tested"),
    ]
    async with ScriptedModelServer(turns) as server:
        run = await run_ndjson(
            "read the library, test the app",
            *("--add-dir", str(ro), "--add-dir", f"{rw}:rw", "--approve", "policy"),
            server=server,
            cwd=calc_repo,
        )
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    cat, tested, refused, dotdot = run.events("tool_result")
    assert cat["ok"] and "from the read-only folder" in cat["output"], cat
    assert tested["ok"] and "1 passed" in tested["output"], tested
    assert not refused["ok"] and "read-only added folder" in refused["output"], refused
    assert not dotdot["ok"] and "reaches outside" in dotdot["output"], dotdot

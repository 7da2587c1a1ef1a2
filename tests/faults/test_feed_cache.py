"""Row 3 of issue 15: the diagnostics feed's caches go with the run that made them."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from driveros.agent import Event
from driveros.config import load_environment
from driveros.runs import RunSpec, execute_run
from driveros.state import list_leases
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.intel import _projects as P

# No ruff: the compile check runs, with PYTHONPYCACHEPREFIX in the feed's cache directory.
SETTINGS = '[diagnostics]\ndisable = ["ruff"]\ntype_checker = "off"\npytest = "off"\n'


@pytest.mark.parametrize("review", [False, True])
async def test_feed_cache_is_removed_with_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, review: bool
) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", None)
    repo = P.write_project(
        tmp_path / "repo", {".driveros.toml": SETTINGS, "m.py": "a = 1\n", "pkg/n.py": "b = 2\n"}
    )
    seen: list[list[str]] = []
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)
        if event.type == "diagnostics":
            seen.append(sorted(p.name for p in tmpdir.iterdir()))

    turns = [
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": "m.py", "content": "a = 2\n"})]),
        Turn(text="done"),
    ]
    async with ScriptedModelServer(turns) as server:
        environ = P.tool_env() | {
            "OPENAI_API_KEY": "sk-test-not-a-real-key",
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_MODEL": "scripted",
            "TMPDIR": str(tmpdir),
        }
        env = load_environment(cwd=repo, environ=environ)
        spec = RunSpec(task="t", workspace=repo, diagnostics=True, memory=False, review=review)
        report = await execute_run(spec, env=env, on_event=on_event)
    if report.scratch is not None:
        await report.scratch.aclose()
    assert report.result.outcome in ("answered", "unverified"), report.result.error
    # The feed's cache is in the sandbox's private TMPDIR (the only temp directory its
    # commands see), which was there during the run ...
    assert any(any(n.startswith("driveros-sbx-") for n in names) for names in seen), seen
    # ... and nothing of it (or of anything else of the run) is left afterwards.
    assert sorted(p.name for p in tmpdir.iterdir()) == []
    assert await list_leases() == []

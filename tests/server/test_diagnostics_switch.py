"""``DRIVEROS_DIAGNOSTICS=off`` holds for every front end: driveros.config reads it (one place),
and the language server's runs, like the CLI's and ACP's, run without the diagnostics feed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import driveros.runs
from driveros.config import load_environment
from driveros_lsp._runner import AgentRunner, RunRequest
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize(
    ("value", "on"), [(None, True), ("on", True), ("off", False), ("0", False), (" No ", False)]
)
def test_the_environment_says_whether_the_feed_runs(
    tmp_path: Path, value: str | None, on: bool
) -> None:
    environ = {"HOME": str(tmp_path)} | ({} if value is None else {"DRIVEROS_DIAGNOSTICS": value})
    env = load_environment(cwd=tmp_path, environ=environ, trusted=False)
    assert env.diagnostics_on is on


@pytest.mark.parametrize(("value", "expected"), [("off", False), ("on", True)])
async def test_the_language_server_honours_the_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, expected: bool
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DRIVEROS_DIAGNOSTICS", value)
    seen: list[Any] = []

    class Stop(Exception):
        pass

    async def capture(spec: Any, **_: Any) -> Any:
        seen.append(spec)
        raise Stop

    monkeypatch.setattr(driveros.runs, "execute_run", capture)
    request = RunRequest(run_id="r1", task="t", workspace=str(tmp_path))
    with pytest.raises(Stop):
        await AgentRunner()(request, on_event=lambda _: None, resume=None)
    assert [s.diagnostics for s in seen] == [expected]


def test_only_driveros_config_reads_the_switch() -> None:
    readers = sorted(
        str(path.relative_to(REPO_ROOT))
        for root in (REPO_ROOT / "core" / "driveros", REPO_ROOT / "server" / "driveros_lsp")
        for path in root.rglob("*.py")
        if re.search(r"[\"']DRIVEROS_DIAGNOSTICS[\"']", path.read_text(encoding="utf-8"))
    )
    assert readers == ["core/driveros/config.py"]

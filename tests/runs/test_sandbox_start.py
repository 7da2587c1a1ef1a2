"""A run's sandbox starts beside its first model request: the request does not wait for it,
the tools do, and a start that fails still ends the run as a setup error with nothing run and
nothing left behind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from driveros import SandboxError
from driveros.sandbox import LocalSandbox
from driveros.state import list_leases
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import run_scripted

WRITE = ToolCallSpec("write_file", {"path": "notes.md", "content": "agent\n"})
ECHO = ToolCallSpec("run", {"command": "echo ran"})


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> list[ScriptedModelServer]:
    """The scripted model servers made in the test (the first one is the run's)."""
    made: list[ScriptedModelServer] = []
    real = ScriptedModelServer.__aenter__

    async def enter(self: ScriptedModelServer) -> ScriptedModelServer:
        made.append(self)
        return await real(self)

    monkeypatch.setattr(ScriptedModelServer, "__aenter__", enter)
    return made


def hold_start_until_asked(
    monkeypatch: pytest.MonkeyPatch, servers: list[ScriptedModelServer], *, fail: bool = False
) -> list[str]:
    """``LocalSandbox.start`` held until the model has the run's first request (10 s at
    most: a request that waited for the start would never come), a moment more, then run or
    failing. Returns what happened, in order: ``asked`` (the request had come when the start
    went on), ``started``, and ``wrote`` for each file the sandbox wrote."""
    real_start, real_write = LocalSandbox.start, LocalSandbox.write_file
    seen: list[str] = []

    async def start(self: LocalSandbox) -> None:
        for _ in range(200):
            if servers and servers[0].requests:
                break
            await asyncio.sleep(0.05)
        seen.append("asked" if servers and servers[0].requests else "not asked")
        await asyncio.sleep(0.2)  # a tool that did not wait would run meanwhile
        if fail:
            raise SandboxError("the sandbox cannot start here")
        await real_start(self)
        seen.append("started")

    async def write_file(self: LocalSandbox, path: str, content: str) -> None:
        seen.append("wrote")
        await real_write(self, path, content)

    monkeypatch.setattr(LocalSandbox, "start", start)
    monkeypatch.setattr(LocalSandbox, "write_file", write_file)
    return seen


@pytest.mark.parametrize("review", [False, True], ids=["workspace", "review"])
async def test_the_first_request_does_not_wait_for_the_sandbox_its_tools_do(
    calc_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: list[ScriptedModelServer],
    review: bool,
) -> None:
    seen = hold_start_until_asked(monkeypatch, servers)
    out = await run_scripted(
        [Turn(tool_calls=[WRITE]), Turn(text="done")], calc_repo, review=review
    )
    if out.report.scratch is not None:
        await out.report.scratch.aclose()
    assert seen == ["asked", "started", "wrote"]
    assert out.report.result.outcome != "setup_error", out.report.result
    (call,) = out.of("tool_result")
    assert call.ok, call.output


@pytest.mark.parametrize("review", [False, True], ids=["workspace", "review"])
async def test_a_sandbox_failing_to_start_after_the_request_is_a_setup_error(
    calc_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: list[ScriptedModelServer],
    review: bool,
) -> None:
    seen = hold_start_until_asked(monkeypatch, servers, fail=True)
    turns = [Turn(tool_calls=[WRITE, ECHO]), Turn(text="done")]
    out = await run_scripted(turns, calc_repo, review=review)
    result = out.report.result
    assert seen == ["asked"]
    assert (result.outcome, result.exit_code) == ("setup_error", 1), result
    assert result.error == "the sandbox cannot start here"
    assert out.types[0] == "run_started" and out.types.count("result") == 1
    assert out.types[-1] == "result"
    assert not out.of("tool_result") and not (calc_repo / "notes.md").exists()
    assert out.report.scratch is None  # the run's own copy is removed, and nothing is left
    assert [lease for lease in await list_leases() if lease.record.kind == "scratch"] == []


async def test_a_docker_daemon_out_of_reach_is_a_setup_error(
    calc_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A real start failing for real: no daemon at DOCKER_HOST. The model's command waits for
    # the start, so the run ends on its failure.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    out = await run_scripted(
        [Turn(tool_calls=[ECHO]), Turn(text="done")], calc_repo, sandbox="docker"
    )
    result = out.report.result
    assert (result.outcome, result.exit_code) == ("setup_error", 1), result
    assert result.error and "cannot reach the docker daemon" in result.error.lower()
    assert out.types.count("result") == 1 and not out.of("tool_result")

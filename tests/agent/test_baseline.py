"""Detectors that judge progress against the pre-edit state are given the baseline snapshot."""

from __future__ import annotations

from pathlib import Path

from tests.agent.conftest import sandbox_env

from driveros import intel
from driveros.agent import Agent, AgentWiring, StuckVerdict, TurnObservation
from driveros.diagnostics import DiagnosticsSnapshot
from driveros.llm import openaicompat
from driveros.sandbox import LocalSandbox
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn


class BaselineProbe:
    """A detector that never fires and remembers the baseline it was handed."""

    name = "baseline-probe"

    def __init__(self) -> None:
        self.baselines: list[DiagnosticsSnapshot] = []

    def set_baseline(self, snapshot: DiagnosticsSnapshot) -> None:
        self.baselines.append(snapshot)

    def observe(self, obs: TurnObservation) -> StuckVerdict | None:
        return None


async def test_first_edit_hands_the_baseline_to_detectors(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    (tmp_path / "ok.py").write_text("x = 1\n")
    edit = {"path": "ok.py", "old_string": "x = 1", "new_string": "x = 2"}
    turns = [
        Turn(tool_calls=[ToolCallSpec("edit_file", edit)]),
        Turn(tool_calls=[ToolCallSpec("edit_file", {**edit, "old_string": "x = 2"})]),
        Turn(text="done"),
    ]
    probe = BaselineProbe()
    async with (
        ScriptedModelServer(turns) as server,
        LocalSandbox(tmp_path, base_env=sandbox_env()) as sandbox,
    ):
        provider = openaicompat.openai("m", base_url=server.openai_base_url, api_key="k")
        agent = Agent(
            provider,
            sandbox,
            wiring=AgentWiring(diagnostics=intel.DiagnosticsFeed(sandbox), detectors=[probe]),
        )
        try:
            await agent.run("touch ok.py")
        finally:
            await provider.aclose()
    assert len(probe.baselines) == 1  # once, before the first edit only
    (baseline,) = probe.baselines
    assert {d.path for d in baseline.items if d.severity == "error"} == {"broken.py"}

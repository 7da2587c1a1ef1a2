"""What a run cost in the editor: the run list says it; `maxCostUsd` caps a run (issue 21)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from driveros.testing import ToolCallSpec, Turn, TurnUsage
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import wait_state

BIG = TurnUsage(input_tokens=10_000, output_tokens=100, cache_read_tokens=4_000)


async def _listed(ed: Any, run_id: str) -> dict[str, Any]:
    listing = await ed.command(protocol.CMD_AGENT_LIST)
    return dict(next(r for r in listing["runs"] if r["runId"] == run_id))


async def test_the_run_list_says_what_a_run_cost_and_max_cost_caps_it(
    workspace: Path, scripted_model
) -> None:
    turns = [
        Turn(tool_calls=[ToolCallSpec("list_files", {})], usage=BIG),
        Turn(text="never reached", usage=BIG),
    ]
    settings = {"provider": "openai", "model": "gpt-4o-mini", "maxCostUsd": 0.002}
    async with (
        scripted_model(turns) as model,
        editor_session(workspace, env=model_env(model), settings=settings) as ed,
    ):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "look"}))["runId"]
        await wait_state(ed, run_id, "finished", "failed")
        await ed.wait_for(lambda: ed.events(run_id, "result"), what="the result")
        summary = await _listed(ed, run_id)
        result = ed.events(run_id, "result")[0]
    assert summary["outcome"] == "resource_cap"
    assert "cost limit of $0.0020 reached" in result["error"]
    assert model.turns_served == 1
    assert summary["costUsd"] is not None and 0 < summary["costUsd"] < 0.002
    assert summary["costUnknown"] is False
    assert (summary["inputTokens"], summary["cachedTokens"]) == (10_000, 4_000)


async def test_an_unknown_model_is_listed_as_cost_unknown(workspace: Path, scripted_model) -> None:
    settings = {"provider": "openai", "model": "scripted-model"}
    async with (
        scripted_model([Turn(text="hello")]) as model,
        editor_session(workspace, env=model_env(model), settings=settings) as ed,
    ):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "look"}))["runId"]
        await wait_state(ed, run_id, "finished", "failed")
        summary = await _listed(ed, run_id)
    assert summary["costUsd"] is None and summary["costUnknown"] is True

"""A client with no ``driveros`` section to give (eglot answers ``workspace/configuration``
with null for a section it does not know) keeps the settings it sent at ``initialize``: the
empty ``didChangeConfiguration`` eglot sends on connect resets nothing."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import SETTINGS, wait_state


async def test_a_null_section_keeps_the_initialization_options(
    workspace: Path, scripted_model
) -> None:
    looping = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})])]
    async with (
        scripted_model(looping, repeat_last=True) as model,
        editor_session(
            workspace,
            env=model_env(model),
            settings={"driveros": {**SETTINGS, "maxIterations": 2}},
        ) as ed,
    ):
        assert ed.client.get_configuration(section="driveros") is None
        # eglot on connect: an empty change, then it answers the pull with null
        ed.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={}))
        for _ in range(3):  # the pull is asynchronous: runs after it must still see 2
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "loop"}))["runId"]
            await wait_state(ed, run_id, "finished")
            await ed.wait_for(lambda: ed.events(run_id, "result"), what="the result")  # noqa: B023
            result = ed.events(run_id, "result")[0]
            assert (result["outcome"], result["turns"]) == ("resource_cap", 2)
        assert not [m for m in ed.client.messages if "invalid settings" in m.message]

"""The wire payloads: one pydantic model per notification and command result, one proposal
shape (the model, the names in protocol.py, the TypeScript interface, the Lua table and the
docs table agree; each file carries its new text), and the checked-in JSON Schema is theirs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from driveros_lsp import protocol
from driveros_lsp.protocol_models import (
    COMMAND_RESULTS,
    NOTIFICATION_PARAMS,
    ProposalFile,
    ProposalParams,
    StartResult,
    council_payload,
    payload_json_schema,
    proposal_file,
    trace_params,
)
from tests.conftest import REPO_ROOT
from tests.server._lsp import PAYLOAD_SCHEMA, wire_problems

DOC = REPO_ROOT / "docs" / "protocol.md"
EVENTS_TS = REPO_ROOT / "editors" / "vscode" / "src" / "events.ts"
PROTOCOL_LUA = REPO_ROOT / "editors" / "neovim" / "lua" / "driveros" / "protocol.lua"


def _wire_fields() -> list[str]:
    return [info.alias or name for name, info in ProposalFile.model_fields.items()]


def test_model_fields_are_the_names_in_protocol_py() -> None:
    assert _wire_fields() == list(protocol.PROPOSAL_FILE_FIELDS)


def test_typescript_interface_declares_exactly_the_fields() -> None:
    source = EVENTS_TS.read_text(encoding="utf-8")
    body = re.search(r"export interface ProposalFileParams \{(.*?)\n\}", source, re.DOTALL)
    assert body, "events.ts has no ProposalFileParams interface"
    declared = re.findall(r"^\s+([A-Za-z_]+)\??:", body.group(1), re.MULTILINE)
    assert declared == list(protocol.PROPOSAL_FILE_FIELDS)


def test_lua_table_lists_exactly_the_fields() -> None:
    source = PROTOCOL_LUA.read_text(encoding="utf-8")
    table = re.search(r"^M\.PROPOSAL_FILE_FIELDS\s*=\s*\{([^}]*)\}", source, re.MULTILINE)
    assert table, "protocol.lua has no PROPOSAL_FILE_FIELDS"
    assert re.findall(r"'([^']*)'", table.group(1)) == list(protocol.PROPOSAL_FILE_FIELDS)


def test_docs_table_lists_exactly_the_fields() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### `ProposalFile`", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([A-Za-z]+)` \|", section, re.MULTILINE)
    assert rows == list(protocol.PROPOSAL_FILE_FIELDS)


@dataclass
class _Change:
    path: str
    action: str
    old_path: str | None = None
    before: str | None = None
    after: str | None = None
    binary: bool = False
    diff: str = ""


@pytest.mark.parametrize(
    ("change", "new_text", "old_path"),
    [
        (_Change("a.py", "modify", before="x\n", after="y\n", diff="d"), "y\n", None),
        (_Change("n.py", "create", after="new\n"), "new\n", None),
        (_Change("d.py", "delete", before="bye\n"), None, None),
        (_Change("b/c.py", "rename", old_path="c.py", before="z\n", after="z!\n"), "z!\n", "c.py"),
        (_Change("logo.png", "modify", binary=True), None, None),
        (_Change("huge.txt", "modify", before=None, after=None, diff=""), None, None),
    ],
)
def test_each_file_carries_its_new_text_once(
    tmp_path: Path, change: _Change, new_text: str | None, old_path: str | None
) -> None:
    wire = proposal_file(change, root=tmp_path, conflicts=["a.py"]).wire()
    assert list(wire) == list(protocol.PROPOSAL_FILE_FIELDS)
    assert wire["newText"] == new_text
    assert wire["oldPath"] == old_path
    assert wire["uri"] == (tmp_path / change.path).as_uri()
    assert wire["conflict"] is (change.path == "a.py")
    assert wire["binary"] is change.binary


def test_params_are_camel_case_on_the_wire(tmp_path: Path) -> None:
    params = ProposalParams(
        run_id="r1",
        state="proposed",
        files=[proposal_file(_Change("a.py", "modify", after="y\n"), root=tmp_path, conflicts=())],
    ).wire()
    assert set(params) == {"runId", "state", "rationale", "council", "files"}
    assert ProposalParams.model_validate(params).files[0].new_text == "y\n"


def test_ask_names_are_the_cores() -> None:
    from driveros.approval import ASK_ACTIONS, ApprovalRequest, Question

    assert protocol.ASK_ACTIONS == ASK_ACTIONS
    question = Question(request=ApprovalRequest(tool="run", arguments={"command": "make"}))
    assert question.message().startswith(protocol.ASK_MESSAGE_PREFIX)


def test_checked_in_schema_is_the_models() -> None:
    # regenerate: .venv/bin/driveros-lsp --print-protocol-schema > editors/protocol.schema.json
    out = subprocess.run(
        [sys.executable, "-m", "driveros_lsp", "--print-protocol-schema"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == payload_json_schema()
    assert PAYLOAD_SCHEMA.read_text(encoding="utf-8") == out.stdout


def test_every_notification_and_command_has_its_model() -> None:
    assert set(NOTIFICATION_PARAMS) == set(protocol.NOTIFICATIONS)
    assert set(COMMAND_RESULTS) == set(protocol.COMMANDS)
    schema = payload_json_schema()
    assert set(schema["notifications"]) == set(protocol.NOTIFICATIONS)
    assert set(schema["commands"]) == set(protocol.COMMANDS)


def test_payloads_are_camel_case_and_closed() -> None:
    defs = payload_json_schema()["$defs"]
    for model in {*NOTIFICATION_PARAMS.values(), *COMMAND_RESULTS.values()}:
        shape = defs[model.__name__]
        assert shape["additionalProperties"] is False, model.__name__
        for name in shape["properties"]:
            assert "_" not in name, f"{model.__name__}.{name}"
    assert StartResult(run_id="r").wire() == {"runId": "r"}


def test_the_trace_never_carries_the_proposal() -> None:
    from driveros.agent import EVENT_TYPES, Proposal, Text
    from driveros.agent import ProposalFile as EventFile

    event = Proposal(run_id="r", files=[EventFile(path="a.py", old_path="b.py")])
    assert trace_params("r", event) is None
    sent = trace_params("r", Text(run_id="r", turn=1, text="hi"))
    assert sent is not None and sent.wire()["event"]["text"] == "hi"
    trace = payload_json_schema()["$defs"]["TraceParams"]["properties"]["event"]
    assert set(trace["discriminator"]["mapping"]) == set(EVENT_TYPES) - {"proposal"}


def test_council_answers_keep_their_two_shapes() -> None:
    for answer in (
        {"verdict": "approve", "summary": "ok", "issues": [], "referee": "openai"},
        {"error": "no second provider"},
    ):
        shaped = council_payload(answer)
        assert shaped is not None and shaped.wire() == answer
    assert council_payload(None) is None


def test_the_schema_check_of_the_test_editor_finds_a_wrong_payload() -> None:
    assert wire_problems("commands", protocol.CMD_AGENT_START, {"runId": "r"}) == []
    assert wire_problems("commands", protocol.CMD_AGENT_START, {"run_id": "r"})
    bad_event = {"runId": "r", "event": {"type": "proposal", "run_id": "r", "files": []}}
    assert wire_problems("notifications", protocol.NOTIFY_TRACE, bad_event)

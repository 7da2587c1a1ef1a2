"""Every field the Neovim plugin reads from what the server sends is in the payload schema.

The names are mirrored and tested (test_protocol_sync.py); this checks the shapes: a real
Neovim runs the plugin's handlers (trace, proposal review, the commands that read a result) on
payloads built from the server's models, every object a proxy that records each key the Lua
code reads, and each recorded path must exist in editors/protocol.schema.json.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from driveros.agent import (
    EVENT_TYPES,
    Approval,
    Build,
    BuildCheck,
    Checkpoint,
    Compaction,
    Diagnostics,
    Edit,
    MemoryEvent,
    Result,
    RunStarted,
    Stuck,
    Text,
    Thinking,
    ToolCall,
    ToolLocation,
    ToolResult,
    TurnFinished,
    TurnStarted,
)
from driveros.diagnostics import DiagnosticItem
from driveros.llm import Usage
from driveros_lsp import protocol
from driveros_lsp.protocol_models import (
    AcceptResult,
    CouncilError,
    CouncilIssue,
    CouncilVerdict,
    Fact,
    ForgetResult,
    ListResult,
    ProposalFile,
    ProposalParams,
    RecallResult,
    RunStateResult,
    RunSummary,
    StartResult,
    TraceLocation,
    TracePosition,
    TraceRange,
    trace_params,
)
from tests.editors.neovim._nvim import run_nvim
from tests.server._lsp import PAYLOAD_SCHEMA

SCHEMA: dict[str, Any] = json.loads(PAYLOAD_SCHEMA.read_text(encoding="utf-8"))


def _trace() -> list[dict[str, Any]]:
    usage = Usage(input_tokens=10, output_tokens=5, cache_read_tokens=2, cost_usd=0.01)
    item = DiagnosticItem(path="app.py", line=3, column=1, code="F821", message="undefined")
    events = [
        RunStarted(run_id="r1", task="fix it", provider="openai", model="m", sandbox="local"),
        TurnStarted(run_id="r1", turn=1),
        Thinking(run_id="r1", turn=1, text="Let me "),
        Thinking(run_id="r1", turn=1, text="look."),
        Text(run_id="r1", turn=1, text="Fixing."),
        ToolCall(run_id="r1", turn=1, call_id="c1", name="edit_file", arguments={"path": "a"}),
        ToolResult(run_id="r1", turn=1, call_id="c1", name="edit_file", ok=True, output="ok"),
        Approval(
            run_id="r1",
            turn=1,
            call_id="c2",
            name="run",
            decision="approved",
            reason="asked",
            asked=True,
            answered_by="Neovim",
            scope="run",
            tier="local",
        ),
        Edit(run_id="r1", turn=1, path="app.py"),
        Diagnostics(run_id="r1", turn=1, fingerprint="f", total=1, new=[item], fixed=[item]),
        Build(
            run_id="r1",
            checks=[BuildCheck(name="unittest", kind="test", origin="Makefile:test")],
            not_run=["flake8 (Makefile:check): not installed in the sandbox; not run"],
        ),
        MemoryEvent(run_id="r1", action="recall", count=1, detail="one fact"),
        Stuck(run_id="r1", turn=1, detector="repeat", detail="same call", evidence=["c1"]),
        Compaction(
            run_id="r1", turn=2, method="summary", tokens_before=9, tokens_after=3, budget=10
        ),
        Checkpoint(run_id="r1", turn=1, checkpoint=1, files=["a"]),
        TurnFinished(run_id="r1", turn=1, duration_ms=12, usage=usage),
        Result(run_id="r1", outcome="answered", exit_code=0, answer="done", usage=usage),
    ]
    assert {e.type for e in events} == set(EVENT_TYPES) - {"proposal"}
    sent = [trace_params("r1", e) for e in events]
    # a semantic tool's answer, with the places it names as LSP Locations
    place = ToolLocation(path="app.py", line=1, column=1)
    refs = ToolResult(
        run_id="r1", turn=1, call_id="c3", name="references", ok=True, output="1", locations=[place]
    )
    span = TraceRange(
        start=TracePosition(line=0, character=0), end=TracePosition(line=0, character=1)
    )
    sent.append(trace_params("r1", refs, [TraceLocation(uri="file:///w/app.py", range=span)]))
    return [p.wire() for p in sent if p is not None]


def _proposals(root: Path) -> list[dict[str, Any]]:
    def file(path: str, action: str, **more: Any) -> ProposalFile:
        return ProposalFile(path=path, uri=(root / path).as_uri(), action=action, **more)

    files = [
        file("app.py", "modify", diff="@@ -1 +1 @@\n-a\n+b\n", new_text="b\n"),
        file("new.py", "create", diff="+x\n", new_text="x\n"),
        file("old.py", "delete", diff="-y\n"),
        file("pkg/moved.py", "rename", old_path="moved.py", new_text="z\n"),
        file("logo.png", "modify", binary=True),
        file("big.txt", "modify", diff="@@\n", conflict=True),
    ]
    verdict = CouncilVerdict(
        verdict="revise",
        summary="close",
        issues=[CouncilIssue(severity="major", description="d", evidence="e")],
        referee="openai",
    )
    return [
        ProposalParams(
            run_id="r1", state="proposed", rationale="why", council=verdict, files=files
        ).wire(),
        ProposalParams(
            run_id="r2",
            state="proposed",
            council=CouncilError(error="no second provider"),
            files=files[:1],
        ).wire(),
        ProposalParams(run_id="r1", state="accepted").wire(),
    ]


def _results() -> dict[str, dict[str, Any]]:
    summary = RunSummary(run_id="r1", task="fix it", state="running", started_at=1.0)
    fact = Fact(id=1, text="t", status="active", task="", created_at="c", updated_at="u")
    return {
        protocol.CMD_AGENT_START: StartResult(run_id="r3").wire(),
        protocol.CMD_AGENT_FIX: StartResult(run_id="r4").wire(),
        protocol.CMD_AGENT_CANCEL: RunStateResult(run_id="r1", state="canceled").wire(),
        protocol.CMD_AGENT_LIST: ListResult(runs=[summary]).wire(),
        protocol.CMD_REVIEW_ACCEPT: AcceptResult(
            run_id="r1", applying=["app.py"], in_flight=[], conflicts={}
        ).wire(),
        protocol.CMD_REVIEW_REJECT: RunStateResult(run_id="r1", state="rejected").wire(),
        protocol.CMD_MEMORY_RECALL: RecallResult(facts=[fact]).wire(),
        protocol.CMD_MEMORY_FORGET: ForgetResult(fact=fact).wire(),
    }


def _deref(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].removeprefix("#/$defs/")]
    return node


def _branches(node: dict[str, Any], data: Any) -> list[tuple[dict[str, Any], Any]]:
    """The object/array shapes ``node`` may be for ``data`` (a discriminated union: the one)."""
    node = _deref(node)
    options = node.get("oneOf") or node.get("anyOf")
    if options is None:
        return [(node, data)]
    tag = node.get("discriminator", {}).get("propertyName")
    if tag is not None and isinstance(data, dict) and tag in data:
        return [(_deref({"$ref": node["discriminator"]["mapping"][data[tag]]}), data)]
    return [pair for option in options for pair in _branches(option, data)]


def _free_map(node: dict[str, Any]) -> bool:
    return node.get("type") == "object" and "properties" not in node


def _in_schema(root: dict[str, Any], data: Any, path: list[str]) -> bool:
    current = _branches(root, data)
    for key in path:
        following: list[tuple[dict[str, Any], Any]] = []
        for node, value in current:
            if _free_map(node):
                return True  # any key of a free-form map (tool arguments, conflicts)
            if key == "[]" and node.get("type") == "array":
                item = value[0] if isinstance(value, list) and value else None
                following += _branches(node["items"], item)
            elif key in node.get("properties", {}):
                sub = value.get(key) if isinstance(value, dict) else None
                following += _branches(node["properties"][key], sub)
        if not following:
            return False
        current = following
    return True


def _opaque_keys() -> list[str]:
    keys = set()
    for shape in SCHEMA["$defs"].values():
        for name, prop in shape.get("properties", {}).items():
            if _free_map(prop) or any(_free_map(o) for o in prop.get("anyOf", ())):
                keys.add(name)
    return sorted(keys)


def test_every_field_the_plugin_reads_is_in_the_payload_schema(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("a\n")
    (tmp_path / "old.py").write_text("y\n")
    (tmp_path / "moved.py").write_text("z0\n")
    trace, proposals, results = _trace(), _proposals(tmp_path), _results()
    payloads = tmp_path / "payloads.json"
    payloads.write_text(
        json.dumps(
            {
                "trace": trace,
                "proposals": proposals,
                "results": results,
                "opaque": _opaque_keys(),
                "source": os.fspath(tmp_path / "app.py"),
            }
        )
    )
    out = run_nvim("payload_reads.lua", cwd=tmp_path, env={"PAYLOADS": os.fspath(payloads)})
    assert "error" not in out, out
    feeds: dict[str, tuple[dict[str, Any], Any]] = {}
    notifications, commands = SCHEMA["notifications"], SCHEMA["commands"]
    for i, params in enumerate(trace, 1):
        feeds[f"trace:{i}"] = (notifications[protocol.NOTIFY_TRACE], params)
    for i, params in enumerate(proposals, 1):
        feeds[f"proposal:{i}"] = (notifications[protocol.NOTIFY_PROPOSAL], params)
    for name, result in results.items():
        feeds[f"command:{name}"] = (commands[name], result)
    reads = [(r["feed"], r["path"]) for r in out["reads"]]
    missing = sorted(
        f"{feed}: {'.'.join(path)}" for feed, path in reads if not _in_schema(*feeds[feed], path)
    )
    assert missing == [], "fields the plugin reads that the server never sends"
    # the handlers really ran: the fields each flow depends on were read
    read = {(feed.split(":")[0], ".".join(path)) for feed, path in reads}
    for expected in [
        ("trace", "event.type"),
        ("trace", "event.new.[].path"),
        ("trace", "event.usage.cost_usd"),
        ("proposal", "files.[].newText"),
        ("proposal", "files.[].oldPath"),
        ("proposal", "council.verdict"),
        ("command", "runId"),
        ("command", "runs.[].state"),
    ]:
        assert expected in read, expected


def test_the_schema_walk_finds_a_field_the_server_never_sends() -> None:
    listing = SCHEMA["commands"][protocol.CMD_AGENT_LIST]
    data = ListResult(runs=[RunSummary(run_id="r", task="t", state="running", started_at=0)]).wire()
    assert _in_schema(listing, data, ["runs", "[]", "state"])
    assert not _in_schema(listing, data, ["runs", "[]", "status"])  # the old Neovim read
    trace = SCHEMA["notifications"][protocol.NOTIFY_TRACE]
    params = trace_params("r", Text(run_id="r", turn=1, text="x"))
    assert params is not None
    assert _in_schema(trace, params.wire(), ["event", "text"])
    assert not _in_schema(trace, params.wire(), ["event", "files"])

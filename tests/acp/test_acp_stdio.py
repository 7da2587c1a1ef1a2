"""``driveros acp`` end to end over stdio against the scripted model, every message the agent
sends validated against the official ACP v1 JSON Schema."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests._scripted import CALC, FIX_CALC

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from ._client import AcpClient, Schema, start_agent
from .conftest import acp_environ

pytestmark = pytest.mark.e2e

FIXED = CALC.replace("a - b", "a + b")
FS = {"fs": {"readTextFile": True, "writeTextFile": True}}


async def _open(
    schema: Schema,
    server: ScriptedModelServer,
    repo: Path,
    caps: dict[str, Any] | None = None,
    args: tuple[str, ...] = (),
) -> tuple[AcpClient, str]:
    client = await start_agent(schema, env=acp_environ(server), cwd=repo, args=args)
    init = await client.request(
        "initialize",
        {"protocolVersion": 1, "clientCapabilities": caps if caps is not None else FS},
    )
    assert init["protocolVersion"] == 1
    assert init["agentCapabilities"]["loadSession"] is True
    assert init["agentCapabilities"]["promptCapabilities"]["embeddedContext"] is True
    new = await client.request("session/new", {"cwd": str(repo), "mcpServers": []})
    assert new["modes"]["currentModeId"] == "ask"
    assert {m["id"] for m in new["modes"]["availableModes"]} == {"ask", "auto", "read-only"}
    return client, new["sessionId"]


def _prompt(session: str, text: str, *extra: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": session, "prompt": [{"type": "text", "text": text}, *extra]}


def _answer(option: str) -> Any:
    async def handler(params: dict[str, Any]) -> dict[str, Any]:
        kinds = {o["kind"] for o in params["options"]}
        assert kinds == {"allow_once", "allow_always", "reject_once", "reject_always"}
        return {"outcome": {"outcome": "selected", "optionId": option}}

    return handler


def _recording_writes(writes: list[dict[str, Any]]) -> Any:
    async def handler(params: dict[str, Any]) -> None:
        writes.append(params)
        return None

    return handler


def _diffs(client: AcpClient) -> list[dict[str, Any]]:
    """The proposal's diffs: one per changed file, shown by the review after the run (the
    run's own edit calls also show what each did to the private copy, as pending)."""
    return [
        c
        for u in client.updates
        if u["sessionUpdate"] == "tool_call" and "action" in (u.get("rawInput") or {})
        for c in u.get("content") or []
        if c["type"] == "diff"
    ]


async def test_fix_streams_a_diff_and_writes_through_the_client_when_allowed(
    acp_schema: Schema, calc_repo: Path
) -> None:
    turns = [
        Turn(thinking="The test adds.", text="Let me fix it.", tool_calls=[FIX_CALC]),
        Turn(text="Fixed add."),
    ]
    async with ScriptedModelServer(turns) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        writes: list[dict[str, Any]] = []
        client.handlers["session/request_permission"] = _answer("allow_once")
        client.handlers["fs/write_text_file"] = _recording_writes(writes)

        async def buffer(params: dict[str, Any]) -> dict[str, Any]:
            return {"content": (calc_repo / Path(params["path"]).name).read_text()}

        client.handlers["fs/read_text_file"] = buffer
        result = await client.request("session/prompt", _prompt(session, "fix the test"))
        assert await client.close() == 0
    assert client.errors == []
    assert result == {"stopReason": "end_turn"}
    kinds = client.kinds()
    assert "agent_thought_chunk" in kinds and "agent_message_chunk" in kinds
    assert "Fixed add." in client.text()
    assert "The test adds." in client.text("agent_thought_chunk")
    calls = [u for u in client.updates if u["sessionUpdate"] == "tool_call"]
    edit_call = next(u for u in calls if u["rawInput"].get("old_string") == "a - b")
    assert edit_call["kind"] == "edit"
    assert edit_call["locations"] == [{"path": str(calc_repo / "calc.py")}]
    done = [
        u
        for u in client.updates
        if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == edit_call["toolCallId"]
    ]
    assert done[-1]["status"] == "completed"
    [diff] = _diffs(client)
    assert diff == {
        "type": "diff",
        "path": str(calc_repo / "calc.py"),
        "oldText": CALC,
        "newText": FIXED,
    }
    [ask] = [r for r in client.requests if r["method"] == "session/request_permission"]
    assert ask["params"]["toolCall"]["content"][0]["type"] == "diff"
    assert writes == [{"sessionId": session, "path": str(calc_repo / "calc.py"), "content": FIXED}]
    # the client wrote it (here: recorded it); driveros did not touch the disk itself
    assert (calc_repo / "calc.py").read_text() == CALC


async def test_without_client_fs_an_allowed_edit_is_applied_on_disk(
    acp_schema: Schema, calc_repo: Path
) -> None:
    async with ScriptedModelServer([Turn(tool_calls=[FIX_CALC]), Turn(text="Done.")]) as server:
        client, session = await _open(acp_schema, server, calc_repo, caps={})
        client.handlers["session/request_permission"] = _answer("allow_once")
        result = await client.request("session/prompt", _prompt(session, "fix the test"))
        assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    assert (calc_repo / "calc.py").read_text() == FIXED
    assert not [r for r in client.requests if r["method"].startswith("fs/")]


async def test_a_rejected_edit_writes_nothing_and_the_model_is_told(
    acp_schema: Schema, calc_repo: Path
) -> None:
    turns = [Turn(tool_calls=[FIX_CALC]), Turn(text="Proposed."), Turn(text="Understood.")]
    async with ScriptedModelServer(turns) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        writes: list[dict[str, Any]] = []
        client.handlers["session/request_permission"] = _answer("reject_once")
        client.handlers["fs/write_text_file"] = _recording_writes(writes)
        first = await client.request("session/prompt", _prompt(session, "fix the test"))
        second = await client.request("session/prompt", _prompt(session, "what now?"))
        assert await client.close() == 0
        last_request = str(server.requests[-1])
    assert client.errors == []
    assert first["stopReason"] == second["stopReason"] == "end_turn"
    assert writes == []
    assert (calc_repo / "calc.py").read_text() == CALC
    assert "calc.py: the user rejected this change" in last_request
    # the second run starts from the user's files again: the rejected edit is not there
    assert len(_diffs(client)) == 1


async def test_an_unsaved_buffer_is_read_through_the_client(
    acp_schema: Schema, calc_repo: Path
) -> None:
    unsaved = "def add(a, b):\n    return a - b  # unsaved buffer\n"
    turns = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]), Turn(text="Seen.")]
    async with ScriptedModelServer(turns) as server:
        client, session = await _open(acp_schema, server, calc_repo)

        async def buffer(params: dict[str, Any]) -> dict[str, Any]:
            assert params["path"] == str(calc_repo / "calc.py")
            return {"content": unsaved}

        client.handlers["fs/read_text_file"] = buffer
        link = {"type": "resource_link", "name": "calc.py", "uri": (calc_repo / "calc.py").as_uri()}
        result = await client.request("session/prompt", _prompt(session, "look at this", link))
        assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    outputs = [
        u["rawOutput"]["output"]
        for u in client.updates
        if u["sessionUpdate"] == "tool_call_update" and "rawOutput" in u
    ]
    assert any("# unsaved buffer" in o for o in outputs)
    assert (calc_repo / "calc.py").read_text() == CALC


async def test_cancel_stops_the_run_and_the_prompt_answers_cancelled(
    acp_schema: Schema, calc_repo: Path
) -> None:
    async with ScriptedModelServer([Turn(text="too late", delay_s=120)]) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        prompt = asyncio.create_task(client.request("session/prompt", _prompt(session, "slow")))
        while not server.received:  # the run reached the model
            await asyncio.sleep(0.02)
        await client.notify("session/cancel", {"sessionId": session})
        result = await prompt
        assert await client.close() == 0
    assert client.errors == []
    assert result == {"stopReason": "cancelled"}
    assert "too late" not in client.text()


async def test_a_command_outside_the_allowlist_asks_and_a_denial_keeps_it_from_running(
    acp_schema: Schema, calc_repo: Path
) -> None:
    run = ToolCallSpec("run", {"command": "touch made-by-agent"})
    async with ScriptedModelServer([Turn(tool_calls=[run]), Turn(text="ok")]) as server:
        # with the network on the sandbox is open, not contained: commands ask
        client, session = await _open(acp_schema, server, calc_repo, args=("--network",))
        client.handlers["session/request_permission"] = _answer("reject_once")
        result = await client.request("session/prompt", _prompt(session, "touch a file"))
        assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    [ask] = [r for r in client.requests if r["method"] == "session/request_permission"]
    assert ask["params"]["toolCall"]["rawInput"] == {"command": "touch made-by-agent"}
    assert ask["params"]["toolCall"]["kind"] == "execute"
    failed = [u for u in client.updates if u.get("status") == "failed"]
    assert failed, "the denied command shows as a failed tool call"
    assert not (calc_repo / "made-by-agent").exists()


async def test_read_only_mode_blocks_edits(acp_schema: Schema, calc_repo: Path) -> None:
    async with ScriptedModelServer([Turn(tool_calls=[FIX_CALC]), Turn(text="ok")]) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        await client.request("session/set_mode", {"sessionId": session, "modeId": "read-only"})
        result = await client.request("session/prompt", _prompt(session, "fix it"))
        assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    assert {"sessionUpdate": "current_mode_update", "currentModeId": "read-only"} in client.updates
    assert _diffs(client) == []
    assert not [r for r in client.requests if r["method"] == "session/request_permission"]
    assert (calc_repo / "calc.py").read_text() == CALC


async def test_load_replays_the_session_history(acp_schema: Schema, calc_repo: Path) -> None:
    async with ScriptedModelServer([Turn(text="Hello from the agent.")]) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        await client.request("session/prompt", _prompt(session, "say hello"))
        live = list(client.updates)
        client.updates.clear()
        loaded = await client.request(
            "session/load", {"sessionId": session, "cwd": str(calc_repo), "mcpServers": []}
        )
        replayed = list(client.updates)
        unknown: Exception | None = None
        try:
            await client.request(
                "session/load", {"sessionId": "nope", "cwd": str(calc_repo), "mcpServers": []}
            )
        except RuntimeError as exc:
            unknown = exc
        assert await client.close() == 0
    assert client.errors == []
    assert loaded["modes"]["currentModeId"] == "ask"
    assert replayed[0] == {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": "say hello"},
    }
    assert replayed[1:] == live
    assert unknown is not None


async def test_hostile_embedded_resources_are_context_never_overlays(
    acp_schema: Schema, calc_repo: Path
) -> None:
    (calc_repo / ".git").mkdir()
    (calc_repo / ".git" / "config").write_text("[core]\n")
    (calc_repo / "outside").mkdir()
    (calc_repo / "link").symlink_to(calc_repo / "outside")
    resources = [
        (calc_repo / ".git" / "config").as_uri(),
        (calc_repo / "link" / "x.py").as_uri(),
        (calc_repo.parent / "elsewhere.py").as_uri(),
        (calc_repo / "calc.py").as_uri().replace("calc.py", "..%2F..%2Fetc%2Fpasswd"),
    ]
    blocks = [
        {"type": "resource", "resource": {"uri": uri, "text": "planted = True\n"}}
        for uri in resources
    ]
    blocks.append(
        {
            "type": "resource",
            "resource": {"uri": (calc_repo / "calc.py").as_uri(), "text": "\udc80"},
        }
    )
    async with ScriptedModelServer([Turn(text="Looked.")]) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        result = await client.request("session/prompt", _prompt(session, "look", *blocks))
        assert await client.close() == 0
        task = str(server.requests[0])
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    assert "Looked." in client.text()
    assert "planted = True" in task  # shown to the model as context, nothing more
    assert (calc_repo / ".git" / "config").read_text() == "[core]\n"
    assert not (calc_repo / "outside" / "x.py").exists()
    assert (calc_repo / "calc.py").read_text() == CALC


def test_stdin_and_stdout_may_be_regular_files(acp_schema: Schema, tmp_path: Path) -> None:
    import json
    import subprocess

    from ._client import DRIVEROS

    request = {"protocolVersion": 1, "clientCapabilities": {}}
    (tmp_path / "in.jsonl").write_text(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": request}) + "\n"
    )
    with (tmp_path / "in.jsonl").open("rb") as stdin, (tmp_path / "out.jsonl").open("wb") as out:
        done = subprocess.run(
            [str(DRIVEROS), "acp"], stdin=stdin, stdout=out, stderr=subprocess.PIPE, timeout=120
        )
    assert done.returncode == 0, done.stderr.decode()
    [line] = (tmp_path / "out.jsonl").read_text().splitlines()
    answer = json.loads(line)
    acp_schema.validate("InitializeResponse", answer["result"])
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize(("option", "written"), [("allow_always", True), ("reject_always", False)])
async def test_always_answers_cover_every_later_edit_of_the_session(
    acp_schema: Schema, calc_repo: Path, option: str, written: bool
) -> None:
    note = ToolCallSpec("write_file", {"path": "NOTES.md", "content": "fixed add\n"})
    turns = [Turn(tool_calls=[FIX_CALC, note]), Turn(text="Both.")]
    async with ScriptedModelServer(turns) as server:
        client, session = await _open(acp_schema, server, calc_repo, caps={})
        client.handlers["session/request_permission"] = _answer(option)
        result = await client.request("session/prompt", _prompt(session, "fix and note"))
        assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    assert len(_diffs(client)) == 2
    assert len([r for r in client.requests if r["method"] == "session/request_permission"]) == 1
    assert ((calc_repo / "calc.py").read_text() == FIXED) is written
    assert (calc_repo / "NOTES.md").exists() is written


async def test_a_file_written_through_the_client_is_read_back_from_its_buffer(
    acp_schema: Schema, calc_repo: Path
) -> None:
    """The editor may keep an accepted edit unsaved: the next prompt's run starts from the
    client's buffer (fs/read_text_file), not from the stale disk."""
    read = ToolCallSpec("read_file", {"path": "calc.py"})
    turns = [
        Turn(tool_calls=[FIX_CALC]),
        Turn(text="Fixed."),
        Turn(tool_calls=[read]),
        Turn(text="Seen."),
    ]
    async with ScriptedModelServer(turns) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        buffers: dict[str, str] = {}
        client.handlers["session/request_permission"] = _answer("allow_once")

        async def write(params: dict[str, Any]) -> None:
            buffers[params["path"]] = params["content"]  # unsaved: the disk keeps the old text

        async def read_buffer(params: dict[str, Any]) -> dict[str, Any]:
            path = params["path"]
            return {"content": buffers.get(path) or Path(path).read_text()}

        client.handlers["fs/write_text_file"] = write
        client.handlers["fs/read_text_file"] = read_buffer
        await client.request("session/prompt", _prompt(session, "fix the test"))
        client.updates.clear()
        result = await client.request("session/prompt", _prompt(session, "show calc.py"))
        assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    assert (calc_repo / "calc.py").read_text() == CALC
    outputs = [
        str(u["rawOutput"])
        for u in client.updates
        if u["sessionUpdate"] == "tool_call_update" and "rawOutput" in u
    ]
    assert any("a + b" in o for o in outputs)
    assert _diffs(client) == []  # the buffer is the baseline: reading proposes nothing


UNSAVED = "# unsaved edit in the editor\ndef add(a, b):\n    return a - b\n"


def _outputs(client: AcpClient) -> list[str]:
    return [
        str(u["rawOutput"].get("output"))
        for u in client.updates
        if u["sessionUpdate"] == "tool_call_update" and "rawOutput" in u
    ]


async def test_the_agent_reads_an_unsaved_buffer_and_edits_on_top_of_it(
    acp_schema: Schema, calc_repo: Path
) -> None:
    """No resource in the prompt: the agent's own read_file asks the client
    (fs/read_text_file); the buffer is what the tool and later commands see, and the
    proposal's oldText is the buffer, not the disk."""
    turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "./calc.py"})]),
        Turn(tool_calls=[ToolCallSpec("run", {"command": "cat calc.py"})]),
        Turn(tool_calls=[FIX_CALC]),
        Turn(text="Fixed on top of your buffer."),
    ]
    async with ScriptedModelServer(turns) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        writes: list[dict[str, Any]] = []
        reads: list[str] = []
        client.handlers["session/request_permission"] = _answer("allow_once")
        client.handlers["fs/write_text_file"] = _recording_writes(writes)

        async def buffer(params: dict[str, Any]) -> dict[str, Any]:
            reads.append(params["path"])
            if params["path"] == str(calc_repo / "calc.py"):
                return {"content": UNSAVED}
            return {"content": Path(params["path"]).read_text()}

        client.handlers["fs/read_text_file"] = buffer
        result = await client.request("session/prompt", _prompt(session, "fix the test"))
        assert await client.close() == 0
    assert client.errors == []
    assert result == {"stopReason": "end_turn"}
    read_out, run_out, *_ = _outputs(client)
    assert "# unsaved edit in the editor" in read_out
    assert "# unsaved edit in the editor" in run_out  # commands see it too
    assert str(calc_repo / "calc.py") in reads
    [diff] = _diffs(client)
    assert diff["oldText"] == UNSAVED
    assert diff["newText"] == UNSAVED.replace("a - b", "a + b")
    assert [w["content"] for w in writes] == [UNSAVED.replace("a - b", "a + b")]
    assert (calc_repo / "calc.py").read_text() == CALC


async def test_a_client_without_read_text_file_is_never_asked(
    acp_schema: Schema, calc_repo: Path
) -> None:
    turns = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]), Turn(text="ok")]
    async with ScriptedModelServer(turns) as server:
        caps = {"fs": {"readTextFile": False, "writeTextFile": True}}
        client, session = await _open(acp_schema, server, calc_repo, caps=caps)

        async def buffer(params: dict[str, Any]) -> dict[str, Any]:
            return {"content": UNSAVED}

        client.handlers["fs/read_text_file"] = buffer
        result = await client.request("session/prompt", _prompt(session, "show calc.py"))
        assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    [read_out] = _outputs(client)
    assert "return a - b" in read_out and "unsaved" not in read_out  # the disk
    assert not [r for r in client.requests if r["method"] == "fs/read_text_file"]


async def test_a_failing_or_hostile_buffer_answer_leaves_the_disk(
    acp_schema: Schema, calc_repo: Path
) -> None:
    """An error, lone surrogates, or a secret file: the agent reads the disk (a secret file
    is not even asked for), and the run goes on."""
    (calc_repo / ".env").write_text("TOKEN=disk\n")
    reads = [ToolCallSpec("read_file", {"path": p}) for p in ("calc.py", "test_calc.py", ".env")]
    turns = [Turn(tool_calls=reads), Turn(text="ok")]
    async with ScriptedModelServer(turns) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        asked: list[str] = []

        async def buffer(params: dict[str, Any]) -> dict[str, Any]:
            asked.append(Path(params["path"]).name)
            if params["path"].endswith("calc.py") and "test_" not in params["path"]:
                raise RuntimeError("no such buffer")
            return {"content": "\udc80 not unicode"}

        client.handlers["fs/read_text_file"] = buffer
        result = await client.request("session/prompt", _prompt(session, "read"))
        assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    assert sorted(asked) == ["calc.py", "test_calc.py"]
    outputs = "\n".join(_outputs(client))
    assert "return a - b" in outputs and "assert add(2, 3) == 5" in outputs
    assert "not unicode" not in outputs and "TOKEN=" not in outputs
    assert _diffs(client) == []


async def test_the_plan_follows_the_run_and_each_review(
    acp_schema: Schema, calc_repo: Path
) -> None:
    note = ToolCallSpec("write_file", {"path": "NOTES.md", "content": "fixed add\n"})
    turns = [Turn(tool_calls=[FIX_CALC, note]), Turn(text="Both.")]
    async with ScriptedModelServer(turns) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        answers = iter(["allow_once", "reject_once"])

        async def answer(params: dict[str, Any]) -> dict[str, Any]:
            return {"outcome": {"outcome": "selected", "optionId": next(answers)}}

        client.handlers["session/request_permission"] = answer
        client.handlers["fs/write_text_file"] = _recording_writes([])
        result = await client.request("session/prompt", _prompt(session, "fix and note"))
        assert await client.close() == 0
    assert client.errors == []  # every plan update is schema-valid
    assert result["stopReason"] == "end_turn"
    plans = [
        [(e["content"].split(" (")[0].split(":")[0], e["status"]) for e in u["entries"]]
        for u in client.updates
        if u["sessionUpdate"] == "plan"
    ]
    work = "Work on the task in a private copy of the workspace"
    assert plans == [
        [(work, "in_progress")],
        [(work, "completed"), ("Review", "pending"), ("Review", "pending")],
        [(work, "completed"), ("Review", "in_progress"), ("Review", "pending")],
        [(work, "completed"), ("Review", "completed"), ("Review", "pending")],
        [(work, "completed"), ("Review", "completed"), ("Review", "in_progress")],
        [(work, "completed"), ("Review", "completed"), ("Review", "completed")],
    ]
    last = [u for u in client.updates if u["sessionUpdate"] == "plan"][-1]["entries"]
    assert [e["content"] for e in last[1:]] == [  # changes come in path order
        "Review: Create NOTES.md: written",
        "Review: Edit calc.py: rejected",
    ]
    # the plan comes before the run's first tool call, the reviews after the run
    kinds = client.kinds()
    assert kinds.index("plan") < kinds.index("tool_call")


async def test_a_session_is_loaded_by_a_later_server_process(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    """An editor restarts its agent: session/load in a new ``driveros acp`` replays the
    session and its next prompt continues the conversation. Another workspace's load, a
    malformed id and a corrupted file are unknown sessions."""
    turns = [Turn(text="Hello from the first process."), Turn(text="Still here.")]
    async with ScriptedModelServer(turns) as server:
        first, session = await _open(acp_schema, server, calc_repo)
        await first.request("session/prompt", _prompt(session, "say hello"))
        assert await first.close() == 0
        live = list(first.updates)

        second = await start_agent(acp_schema, env=acp_environ(server), cwd=calc_repo)
        await second.request("initialize", {"protocolVersion": 1, "clientCapabilities": FS})
        load = {"sessionId": session, "cwd": str(calc_repo), "mcpServers": []}
        loaded = await second.request("session/load", load)
        replayed = list(second.updates)
        await second.request("session/prompt", _prompt(session, "and now?"))
        refused = []
        for other in (
            {**load, "cwd": str(tmp_path)},
            {**load, "sessionId": "../" + session},
        ):
            try:
                await second.request("session/load", other)
            except RuntimeError as exc:
                refused.append(str(exc))
        assert await second.close() == 0
        second_request = str(server.requests[-1])
    assert first.errors == second.errors == []
    assert loaded["modes"]["currentModeId"] == "ask"
    assert replayed[0]["content"]["text"] == "say hello"
    assert replayed[1:] == live
    assert "say hello" in second_request and "Hello from the first process." in second_request
    assert "Still here." in second.text()
    assert len(refused) == 2 and all("unknown session" in r for r in refused)


async def test_a_corrupted_kept_session_is_unknown_not_a_crash(
    acp_schema: Schema, calc_repo: Path
) -> None:
    import os

    async with ScriptedModelServer([]) as server:
        first, session = await _open(acp_schema, server, calc_repo)
        assert await first.close() == 0
        kept = Path(os.environ["DRIVEROS_STATE_DIR"]) / "acp-sessions" / f"{session}.json"
        assert kept.stat().st_mode & 0o077 == 0  # the user's alone
        kept.write_text('{"version": 1, "cwd": "/", "mode": "ask", "updates": [{"x": 1}]}')
        second = await start_agent(acp_schema, env=acp_environ(server), cwd=calc_repo)
        await second.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        load = {"sessionId": session, "cwd": str(calc_repo), "mcpServers": []}
        with pytest.raises(RuntimeError, match="unknown session"):
            await second.request("session/load", load)
        assert await second.close() == 0
    assert second.errors == []


@pytest.mark.parametrize("caps", [FS, {}], ids=["through-the-client", "on-disk"])
async def test_an_allowed_edit_never_goes_through_a_directory_swapped_for_a_symlink(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path, caps: dict[str, Any]
) -> None:
    """The attacker swaps the edited file's directory for a symbolic link to elsewhere while
    the user looks at the diff: the allowed edit is written neither through the client nor
    on disk, and the model hears it was not written."""
    (calc_repo / "pkg").mkdir()
    (calc_repo / "pkg" / "mod.py").write_text("X = 0\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    create = ToolCallSpec("write_file", {"path": "pkg/new.py", "content": "planted = True\n"})
    turns = [Turn(tool_calls=[create]), Turn(text="Proposed."), Turn(text="Understood.")]
    async with ScriptedModelServer(turns) as server:
        client, session = await _open(acp_schema, server, calc_repo, caps=caps)
        writes: list[dict[str, Any]] = []
        client.handlers["fs/write_text_file"] = _recording_writes(writes)

        async def swap_then_allow(params: dict[str, Any]) -> dict[str, Any]:
            (calc_repo / "pkg" / "mod.py").unlink()
            (calc_repo / "pkg").rmdir()
            (calc_repo / "pkg").symlink_to(outside)
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        client.handlers["session/request_permission"] = swap_then_allow
        await client.request("session/prompt", _prompt(session, "add a module"))
        await client.request("session/prompt", _prompt(session, "and?"))
        assert await client.close() == 0
        last_request = str(server.requests[-1])
    assert client.errors == []
    assert writes == []
    assert list(outside.iterdir()) == []
    assert "pkg/new.py: could not be written" in last_request


async def test_titles_show_what_the_model_wrote_not_what_it_makes_a_screen_show(
    acp_schema: Schema, calc_repo: Path
) -> None:
    """A prompt-injected model hides the end of a command behind a right-to-left override and
    a long harmless prefix, and names a file to pass for another: every title the user is
    asked about shows the override escaped and says it was cut; the full command stays in
    rawInput."""
    hidden = "echo harmless \u202e" + "a" * 300 + "\n; touch PWNED"
    spoof = "calc\u202eyp.txt"
    turns = [
        Turn(tool_calls=[ToolCallSpec("run", {"command": hidden})]),
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": spoof, "content": "x\n"})]),
        Turn(text="ok"),
    ]
    async with ScriptedModelServer(turns) as server:
        # with the network on the sandbox is open, not contained: commands ask
        client, session = await _open(acp_schema, server, calc_repo, args=("--network",))
        client.handlers["session/request_permission"] = _answer("reject_once")
        await client.request("session/prompt", _prompt(session, "go"))
        assert await client.close() == 0
    assert client.errors == []
    asks = [r["params"]["toolCall"] for r in client.requests if r["method"].endswith("permission")]
    titles = [ask["title"] for ask in asks] + [u.get("title") or "" for u in client.updates]
    assert not any("\u202e" in title or "\n" in title for title in titles)
    [command] = [ask for ask in asks if (ask.get("rawInput") or {}).get("command") == hidden]
    assert "\\u202e" in command["title"] and command["title"].endswith("…")
    [edit] = [ask for ask in asks if "yp.txt" in ask["title"]]
    assert edit["title"] == "Create calc\\u202eyp.txt"
    assert not (calc_repo / "PWNED").exists()

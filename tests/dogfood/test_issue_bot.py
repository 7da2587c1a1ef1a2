"""``driveros issue-bot``: a patch and a summary from an issue, the workspace untouched."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.dogfood._run import driveros, git_repo, model_env

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
ISSUE = "# add() subtracts\n\nadd(2, 3) returns -1; `python3 test_calc.py` fails.\n"

FIX = [
    Turn(tool_calls=[ToolCallSpec("run", {"command": "python3 -m pytest -q test_calc.py"})]),
    Turn(
        tool_calls=[
            ToolCallSpec(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ]
    ),
    Turn(tool_calls=[ToolCallSpec("run", {"command": "python3 -m pytest -q test_calc.py"})]),
    Turn(text="add() subtracted; it adds now and the test passes."),
]


async def test_issue_bot_writes_patch_and_summary_without_touching_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    await git_repo(repo, {"calc.py": CALC, "test_calc.py": TEST})
    (tmp_path / "issue.md").write_text(ISSUE)
    async with ScriptedModelServer(FIX) as server:
        res = await driveros(
            "issue-bot",
            str(tmp_path / "issue.md"),
            "--workspace",
            str(repo),
            "--out",
            str(tmp_path / "out"),
            "--format",
            "json",
            cwd=repo,
            env=model_env(server.openai_base_url),
        )
        first_task = json.dumps(server.requests[0])
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["outcome"] == "answered" and result["verified"] is True
    assert result["files"] == ["calc.py"]
    patch = (tmp_path / "out" / "patch.diff").read_text()
    assert "-    return a - b" in patch and "+    return a + b" in patch
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "add() subtracts" in summary and "`calc.py`" in summary
    assert "add(2, 3) returns -1" in first_task
    assert (repo / "calc.py").read_text() == CALC  # the user's files are untouched
    record = json.loads((repo / ".driveros" / "corpus.jsonl").read_text().splitlines()[0])
    assert record["record"]["kind"] == "issue-bot"
    assert record["record"]["id"] == result["record_id"]


@asynccontextmanager
async def fake_github(issue: dict[str, object]) -> AsyncIterator[str]:
    """A loopback stand-in for the GitHub REST API's issue endpoint."""
    seen: list[str] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        seen.append(head)
        ok = head.startswith("GET /repos/acme/tool/issues/7 ") and "bearer gh-token" in head.lower()
        body = json.dumps(issue if ok else {"message": "Not Found"}).encode()
        status = "200 OK" if ok else "404 Not Found"
        writer.write(
            f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


async def test_issue_bot_reads_a_github_issue_and_reports_bad_refs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    await git_repo(repo, {"calc.py": CALC, "test_calc.py": TEST})
    issue = {"title": "add() subtracts", "body": "add(2, 3) returns -1"}
    async with fake_github(issue) as api, ScriptedModelServer(FIX) as server:
        env = model_env(server.openai_base_url, GITHUB_API_URL=api, GITHUB_TOKEN="gh-token")
        res = await driveros(
            "issue-bot",
            "--github",
            "acme/tool#7",
            "--workspace",
            str(repo),
            "--out",
            str(tmp_path / "out"),
            "--no-record",
            cwd=repo,
            env=env,
        )
        assert res.returncode == 0, res.stderr
        assert "# issue-bot: add() subtracts" in (tmp_path / "out" / "summary.md").read_text()
        missing = await driveros(
            "issue-bot", "--github", "acme/tool#8", "--workspace", str(repo), cwd=repo, env=env
        )
        assert missing.returncode == 1 and "GitHub answered 404" in missing.stderr
        bad = await driveros("issue-bot", "--github", "not a ref", cwd=repo, env=env)
        assert bad.returncode == 1 and "owner/repo#123" in bad.stderr
    assert "Traceback" not in missing.stderr + bad.stderr

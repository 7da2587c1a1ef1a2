"""Issue 35 row 5, variation: ``driveros agent --format ndjson`` on a terminal. Its events
carry model text and command output; JSON encoders leave DEL, C1 controls and bidi overrides
raw, so every line is written with them as ``\\u`` escapes: the data a parser reads is the
same, the terminal acts on nothing."""

from __future__ import annotations

import json
from pathlib import Path

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.dogfood._run import driveros, model_env
from tests.security.test_untrusted_text import HOSTILE, assert_clean


async def test_ndjson_events_show_no_control_and_keep_the_data(tmp_path: Path) -> None:
    (tmp_path / "hostile.txt").write_text(HOSTILE + "\n")
    cat = ToolCallSpec("run", {"command": "cat hostile.txt"})
    turns = [Turn(text=HOSTILE, tool_calls=[cat]), Turn(text=HOSTILE)]
    async with ScriptedModelServer(turns) as server:
        done = await driveros(
            "agent", "--task", "t", "--workspace", str(tmp_path), "--format", "ndjson",
            "--no-memory", "--approve", "policy", cwd=tmp_path,
            env=model_env(server.openai_base_url),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_clean(done.stdout)
    assert_clean(done.stderr)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["answer"] == HOSTILE
    assert any(HOSTILE in str(e.get("output", "")) for e in events[:-1])  # cat's output

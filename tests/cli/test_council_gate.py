"""``driveros agent --review --council``: other providers review the diff before it lands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.dogfood._run import driveros, model_env

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

CALC = "def add(a, b):\n    return a - b\n"
AGENT = [
    Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]),
    Turn(
        tool_calls=[
            ToolCallSpec(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ]
    ),
    Turn(text="add() adds now."),
]


def _council(verdict: str) -> list[Turn]:
    critic = {"summary": "checked", "issues": []}
    return [
        Turn(text=json.dumps(critic)),
        Turn(text=json.dumps({"verdict": verdict, "summary": f"{verdict} it"})),
    ]


@pytest.mark.parametrize(
    ("verdict", "code", "final"),
    [
        ("approve", 0, "def add(a, b):\n    return a + b\n"),
        ("reject", 6, CALC),
    ],
)
async def test_council_gate_on_kept_changes(
    tmp_path: Path, verdict: str, code: int, final: str
) -> None:
    (tmp_path / "calc.py").write_text(CALC)
    async with (
        ScriptedModelServer(AGENT) as agent,
        ScriptedModelServer(_council(verdict)) as council,
    ):
        env = model_env(
            agent.openai_base_url,
            ANTHROPIC_API_KEY="k2",
            ANTHROPIC_BASE_URL=council.anthropic_base_url,
            DRIVEROS_DIAGNOSTICS="off",
        )
        res = await driveros(
            "agent",
            "--task",
            "fix add",
            "--provider",
            "openai",
            "--review",
            "--review-action",
            "keep",
            "--council",
            "--format",
            "json",
            cwd=tmp_path,
            env=env,
        )
        reviewed = json.dumps(council.requests[0])
    assert res.returncode == code, res.stderr
    assert f"council: {verdict} (referee anthropic:" in res.stderr
    assert "+    return a + b" in reviewed  # the council saw the diff
    assert (tmp_path / "calc.py").read_text() == final
    result = json.loads(res.stdout)  # the result tells what happened to the change
    assert result["exit_code"] == code
    assert result["outcome"] == ("refused" if code == 6 else "answered")


async def test_council_needs_review(tmp_path: Path) -> None:
    res = await driveros(
        "agent", "--task", "x", "--council", cwd=tmp_path, env=model_env("http://127.0.0.1:9")
    )
    assert res.returncode == 1 and "--council needs --review" in res.stderr

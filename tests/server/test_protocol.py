"""docs/protocol.md, protocol.py and the settings schema agree; the CLI keeps its contract."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from driveros_lsp import Settings, parse_settings, protocol, settings_json_schema
from tests.conftest import REPO_ROOT

DOC = REPO_ROOT / "docs" / "protocol.md"


def _python_names() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(protocol).items()
        if name.isupper() and isinstance(value, str)
    }


def _doc_names() -> dict[str, str]:
    row = re.compile(r"^\| `([A-Z_]+)` \| `([^`]*)` \|$", re.MULTILINE)
    return dict(row.findall(DOC.read_text(encoding="utf-8")))


def test_protocol_doc_names_equal_python() -> None:
    assert _doc_names() == _python_names()


def test_protocol_doc_lists_every_command_and_setting() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in (*protocol.COMMANDS, *protocol.NOTIFICATIONS):
        assert f"`{name}`" in text, name
    for field in settings_json_schema()["properties"]:
        assert f"| `{field}` |" in text, field


def test_settings_invalid_fields_fall_back_to_defaults() -> None:
    settings, problems = parse_settings(
        {"driveros": {"provider": "nope", "maxIterations": 5, "sandbox": "docker", "x": 1}}
    )
    assert settings == Settings(max_iterations=5, sandbox="docker")
    assert len(problems) == 2
    assert "'provider'" in problems[0]
    assert "unknown setting 'x'" in problems[1]


def test_settings_non_object_is_one_problem() -> None:
    assert parse_settings(["a"]) == (Settings(), ["settings must be an object, got list"])
    assert parse_settings(None) == (Settings(), [])


def test_settings_schema_cli_prints_the_schema() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "driveros_lsp", "--print-settings-schema"],
        capture_output=True,
        text=True,
        check=True,
    )
    schema = json.loads(out.stdout)
    assert schema == settings_json_schema()
    assert schema["properties"]["maxWallS"]["default"] == 900.0
    assert schema["additionalProperties"] is False


def test_cli_usage_error_exits_1() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "driveros_lsp", "--tcp", "nohost"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    assert "expected HOST:PORT" in out.stderr
    assert out.stdout == ""

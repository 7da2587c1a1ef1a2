"""Run options are defined once: every front end starts from RunOptions' defaults and bounds."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from driveros.acp import Settings as AcpSettings
from driveros.agent import AgentConfig
from driveros.cli._main import _build_parser, main
from driveros.runs import RunOptions, RunSpec
from driveros_lsp import Settings as LspSettings
from driveros_lsp import parse_settings, settings_json_schema


def test_the_editor_settings_are_the_run_options_plus_the_editors_own() -> None:
    schema = settings_json_schema()["properties"]
    for name, info in RunOptions.model_fields.items():
        wire = LspSettings.model_fields[name].alias
        assert wire in schema, name
        assert schema[wire]["default"] == info.default
        assert LspSettings.model_fields[name].metadata == info.metadata, name
    own = set(LspSettings.model_fields) - set(RunOptions.model_fields)
    assert own == {
        "approval",
        "approval_timeout_s",
        "council",
        "max_concurrent_runs",
        "publish_diagnostics",
        "inline_completion",
    }


def test_every_front_end_starts_from_the_same_limits() -> None:
    defaults = RunOptions()
    config = AgentConfig()
    assert (config.max_iterations, config.max_wall_s) == (
        defaults.max_iterations,
        defaults.max_wall_s,
    )
    acp = AcpSettings()
    assert (acp.max_iterations, acp.max_wall_s) == (defaults.max_iterations, defaults.max_wall_s)
    for command in ("agent", "acp"):
        parser, _ = _build_parser([command])
        args = parser.parse_args([command])
        assert (args.max_iterations, args.max_wall) == (
            defaults.max_iterations,
            defaults.max_wall_s,
        ), command
    assert LspSettings().max_iterations == defaults.max_iterations


def test_a_spec_carries_the_options_of_a_settings_object(tmp_path: Path) -> None:
    editor = LspSettings(provider="ollama", max_iterations=7, sandbox="docker", memory=True)
    spec = editor.spec(task="t", workspace=tmp_path, approve="never")
    assert isinstance(spec, RunSpec)
    assert (spec.provider, spec.max_iterations, spec.sandbox, spec.memory) == (
        "ollama",
        7,
        "docker",
        True,
    )
    acp = AcpSettings(model="m", max_wall_s=12.0, diagnostics=False)
    options = RunOptions.of(acp)
    assert (options.model, options.max_wall_s, options.diagnostics) == ("m", 12.0, False)
    # a per-run value overrides the option for that run only
    assert options.spec(task="t", workspace=tmp_path, diagnostics=True).diagnostics is True


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_iterations", 501), ("max_wall_s", 86_401.0), ("max_iterations", 0)],
)
def test_out_of_range_options_are_refused_everywhere(field: str, value: float) -> None:
    with pytest.raises(ValidationError):
        RunOptions.model_validate({field: value})
    settings, problems = parse_settings({field: value})
    assert getattr(settings, field) == getattr(RunOptions(), field)
    assert len(problems) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["acp", "--max-iterations", "501"],
        ["agent", "--task", "t", "--workspace", "{ws}", "--max-iterations", "501"],
    ],
)
def test_the_cli_and_acp_refuse_an_out_of_range_limit_in_one_line(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([a.format(ws=tmp_path) for a in argv]) == 1
    err = capsys.readouterr().err
    assert "invalid run settings" in err and "max_iterations" in err, err
    assert "Traceback" not in err

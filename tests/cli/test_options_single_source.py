"""Every run option is declared once, in ``driveros.runs`` (``RunOptions``, ``HeadlessOptions``,
``RunSpec``): the flags of ``driveros agent`` and ``driveros acp`` are made from the fields
(name, default, choices, help), the parsed flags reach the run's spec without a hand copy, the
settings of ACP and of the language server inherit the fields instead of repeating them, and
no module in cli/ spells a ``Literal``'s choices again."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from pydantic.fields import FieldInfo
from tests.conftest import REPO_ROOT

from driveros.acp import Settings as AcpSettings
from driveros.cli._main import _build_parser
from driveros.cli._options import option_flag, run_values
from driveros.runs import HeadlessOptions, RunOptions, RunSpec
from driveros_lsp import Settings as LspSettings

CLI = REPO_ROOT / "core" / "driveros" / "cli"
#: The fields of one run that ``driveros agent`` takes as flags besides the options.
AGENT_PER_RUN = ("approve", "review", "allow_secret_files")


def _sub(command: str) -> argparse.ArgumentParser:
    parser, _ = _build_parser([command])
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub: argparse.ArgumentParser = action.choices[command]
    return sub


def _flags(command: str) -> dict[str, argparse.Action]:
    return {flag: a for a in _sub(command)._actions for flag in a.option_strings}


def _parse(command: str, *argv: str) -> argparse.Namespace:
    parser, _ = _build_parser([command])
    return parser.parse_args([command, *argv])


def _flag(name: str) -> str:
    return option_flag(name, RunSpec.model_fields[name])


def _fields(command: str) -> list[str]:
    per_run = AGENT_PER_RUN if command == "agent" else ()
    return [*HeadlessOptions.model_fields, *per_run]


@pytest.mark.parametrize("command", ["agent", "acp"])
def test_every_run_option_is_a_flag_with_its_declared_default_and_choices(command: str) -> None:
    flags = _flags(command)
    help_text = _sub(command).format_help()
    for name in _fields(command):
        field = RunSpec.model_fields[name]
        flag = _flag(name)
        assert flag in flags, f"{command}: {name} has no flag {flag}"
        assert flag in help_text, (command, flag)
        action = flags[flag]
        if name in ("provider", "model"):  # --provider NAME[:MODEL], --model NAME
            assert action.default is None
            continue
        if get_origin(field.annotation) is list:
            assert action.default is None  # nothing given: the field's own default
        else:
            assert action.default == field.default, (command, name)
        if get_origin(field.annotation) is Literal:
            assert tuple(action.choices or ()) == get_args(field.annotation), (command, name)
        description = (field.description or "").lower()
        assert action.help and action.help.lower() in description, (command, name)


def _other_value(name: str, field: FieldInfo) -> tuple[list[str], Any]:
    """argv that sets field ``name`` to a value that is not its default, and that value."""
    annotation = field.annotation
    flag = _flag(name)
    if name == "provider":
        return [flag, "ollama"], "ollama"
    if name == "model":
        return [flag, "some-model"], "some-model"
    if annotation is bool:
        return ([f"--no-{flag[2:]}"], False) if field.default else ([flag], True)
    if get_origin(annotation) is Literal:
        value = next(c for c in reversed(get_args(annotation)) if c != field.default)
        return [flag, value], value
    if get_origin(annotation) is list:
        return [flag, "secrets/*.pem"], ["secrets/*.pem"]
    shape = {a for a in (annotation, *get_args(annotation)) if a in (int, float)}
    low = next((m.ge for m in field.metadata if hasattr(m, "ge")), None)
    value = max(int(low or 0), 2) + 1 if int in shape else 7.5
    return [flag, str(value)], value


@pytest.mark.parametrize("command", ["agent", "acp"])
def test_every_flag_reaches_the_run_without_a_hand_copy(command: str, tmp_path: Path) -> None:
    argv: list[str] = []
    wanted: dict[str, Any] = {}
    for name in _fields(command):
        if name == "model":  # set through --provider's partner below
            continue
        given, value = _other_value(name, RunSpec.model_fields[name])
        argv += given
        wanted[name] = value
    argv += ["--model", "some-model"]
    wanted["model"] = "some-model"
    args = _parse(command, *argv)
    values = run_values(args)
    if command == "agent":
        spec = RunSpec(**values, task="t", workspace=tmp_path)
        got = {name: getattr(spec, name) for name in wanted}
    else:
        settings = AcpSettings(**values)
        got = {name: getattr(settings, name) for name in wanted}
        # and every option goes on into each prompt's spec
        spec = settings.spec(task="t", workspace=tmp_path)
        assert _options(spec, HeadlessOptions) == _options(settings, HeadlessOptions)
    assert got == wanted
    for name, value in wanted.items():
        assert value != RunSpec.model_fields[name].default, name  # the test changed each one


@pytest.mark.parametrize("command", ["agent", "acp"])
def test_no_flag_given_means_every_declared_default(command: str, tmp_path: Path) -> None:
    values = run_values(_parse(command))
    if command == "agent":
        made: HeadlessOptions = RunSpec(**values, task="t", workspace=tmp_path)
    else:
        made = AcpSettings(**values)
    assert _options(made, HeadlessOptions) == HeadlessOptions().model_dump()


def _options(source: object, model: type[RunOptions]) -> dict[str, Any]:
    return {name: getattr(source, name) for name in model.model_fields}


def _class_fields(path: Path, class_name: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name)
    return {
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }


def test_the_settings_classes_inherit_the_options_instead_of_repeating_them() -> None:
    assert issubclass(AcpSettings, HeadlessOptions)
    assert issubclass(LspSettings, RunOptions)
    acp = _class_fields(REPO_ROOT / "core/driveros/acp/_settings.py", "Settings")
    lsp = _class_fields(REPO_ROOT / "server/driveros_lsp/_settings.py", "Settings")
    assert acp & set(HeadlessOptions.model_fields) == set()
    assert lsp & set(RunOptions.model_fields) == set()
    for name, field in HeadlessOptions.model_fields.items():
        assert AcpSettings.model_fields[name].default == field.default, name
    for name, field in RunOptions.model_fields.items():
        assert LspSettings.model_fields[name].default == field.default, name
        assert LspSettings.model_fields[name].description == field.description, name


def _literal_choices() -> list[frozenset[str]]:
    """The value sets of every ``Literal[...]`` written in the library (aliases, fields)."""
    found: list[frozenset[str]] = []
    for path in sorted((REPO_ROOT / "core" / "driveros").rglob("*.py")):
        if "suites" in path.parts:  # eval workspaces are data
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Literal"
            ):
                elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                values = {e.value for e in elts if isinstance(e, ast.Constant)}
                if len(values) > 1 and all(isinstance(v, str) for v in values):
                    found.append(frozenset(values))
    return found


def test_no_cli_module_spells_a_literals_choices_again() -> None:
    """A ``choices=(...)`` of two or more values of one ``Literal`` spells it again: the
    choices come from the ``Literal`` (``get_args``) instead."""
    literals = _literal_choices()
    assert frozenset({"local", "docker"}) in literals  # the walk found them
    spelled = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.keyword) or node.arg != "choices":
                continue
            if not isinstance(node.value, ast.Tuple | ast.List):
                continue
            values = frozenset(e.value for e in node.value.elts if isinstance(e, ast.Constant))
            if len(values) > 1 and any(values <= literal for literal in literals):
                spelled.append(f"{path.name}:{node.lineno}")
    assert spelled == []


def test_the_cli_reference_lists_every_generated_flag_of_agent() -> None:
    text = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in _fields("agent"):
        assert f"| `{_flag(name)}" in text, name


def test_the_acp_reference_names_every_generated_flag() -> None:
    text = (REPO_ROOT / "docs" / "acp.md").read_text(encoding="utf-8")
    for name in [*_fields("acp"), "mode"]:
        flag = "--mode" if name == "mode" else _flag(name)
        assert f"`{flag}" in text, name

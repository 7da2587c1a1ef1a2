"""The run options' flags of ``driveros agent`` and ``driveros acp`` are made from
``driveros.runs.RunOptions`` (choices from its ``Literal``s, defaults and help from its fields):
no subcommand spells them again."""

from __future__ import annotations

import argparse
import re
from typing import get_args

import pytest
from tests.conftest import REPO_ROOT

from driveros.cli._main import _build_parser
from driveros.runs import RunOptions

GENERATED = {
    "agent": ("sandbox", "runtime", "untrusted", "network", "memory"),
    "acp": ("sandbox", "runtime", "network", "untrusted"),
}


def _actions(command: str) -> dict[str, argparse.Action]:
    parser, _ = _build_parser([command])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[
        command
    ]
    return {a.dest: a for a in sub._actions}


@pytest.mark.parametrize("command", sorted(GENERATED))
def test_the_flags_are_the_run_options(command: str) -> None:
    actions = _actions(command)
    for name in GENERATED[command]:
        field = RunOptions.model_fields[name]
        action = actions[name]
        assert action.default == field.default, name
        if field.annotation is not bool:
            assert tuple(action.choices or ()) == get_args(field.annotation), name
        assert action.help and action.help.rstrip(".").lower() in (field.description or "").lower()


def test_no_subcommand_spells_the_choices_again() -> None:
    spelled = [
        str(path.relative_to(REPO_ROOT))
        for path in sorted((REPO_ROOT / "core" / "driveros" / "cli").glob("*.py"))
        if re.search(
            r"choices=\(\"local\", \"docker\"|choices=\(\"runc\"", path.read_text(encoding="utf-8")
        )
    ]
    assert spelled == []

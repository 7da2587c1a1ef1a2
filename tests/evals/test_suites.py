"""Suite files: the shipped suites load, bad suites get clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros import ConfigError
from driveros.evals import load_suite, shipped_suite_names


def test_shipped_suites_load_with_workspaces_and_cassettes() -> None:
    names = shipped_suite_names()
    assert {"smoke", "fix-failing-test", "diagnostics-fix", "dogfood"} <= set(names)
    for name in names:
        suite = load_suite(name)
        if suite.kind == "corpus":
            assert suite.corpus
            continue
        assert suite.cases, name
        for case in suite.cases:
            workspace = suite.workspace_dir(case)
            assert workspace is not None and workspace.is_dir(), (name, case.id)
            assert suite.cassette_path(case).is_file(), (name, case.id)
            assert case.scripted, (name, case.id)


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: x\ncases:\n  - {id: a, task: t, workspace: ws}\n"
            "  - {id: a, task: t, workspace: ws}\n",
            "repeats case ids: a",
        ),
        (
            "name: x\ncases:\n"
            "  - {id: a, task: t, workspace: ws, scorers: [{type: answer, regex: '('}]}\n",
            "invalid regex",
        ),
        (
            "name: x\ncases:\n  - {id: a, task: t, workspace: ws, scorers: [{type: nope}]}\n",
            "invalid suite",
        ),
        ("- just\n- a list\n", "must be a mapping"),
        ("name: [unclosed\n", "cannot read suite"),
    ],
)
def test_bad_suites_get_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_suite(str(_write(tmp_path, text)))


def test_unknown_suite_names_the_shipped_ones() -> None:
    with pytest.raises(ConfigError, match="smoke"):
        load_suite("no-such-suite")

"""``driveros doctor``'s detected build (issue 36): each declared check with where it came
from, read from the workspace's files and never run."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_doctor import as_json, check, doctor
from tests.intel.test_declared import MORE_ITERTOOLS


def test_doctor_shows_the_declared_build_with_its_origins(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for rel, text in MORE_ITERTOOLS.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    marker = tmp_path / "ran"
    # a declared command is data: doctor never runs it
    (ws / "package.json").write_text(f'{{"scripts": {{"test": "touch {marker} && jest"}}}}')
    report = as_json(doctor(ws, "--format", "json"))
    assert not marker.exists()
    assert check(report, "build", "unittest")["detail"] == "tests: unittest -v, from Makefile:test"
    assert check(report, "build", "flake8")["detail"] == (
        "linter: flake8 --exclude .venv,venv,docs/conf.py ., from Makefile:check"
    )
    assert check(report, "build", "mypy")["detail"] == (
        "type checker: mypy, from setup.cfg [mypy] (configured)"
    )
    assert check(report, "build", "jest")["detail"] == "tests: jest, from package.json scripts.test"
    tools = [(d["tool"], d["origin"]) for d in report["facts"]["build"]["declared"]]
    assert ("stubtest", "Makefile:check") in tools and ("black", "Makefile:check") in tools
    text = doctor(ws).stdout
    assert "detected build:" in text and "unittest: tests: unittest -v, from Makefile:test" in text


def test_doctor_says_when_no_test_command_is_declared(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    report = as_json(doctor(ws, "--format", "json"))
    assert check(report, "build", "tests")["status"] == "warning"
    assert report["facts"]["build"]["declared"] == []

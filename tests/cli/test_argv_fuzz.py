"""Random command lines for every subcommand: a clean exit (a result, a usage message, data),
never a traceback, never an internal error, and a result object for json/ndjson failures.

Runs in-process (``driveros.cli._main.main``) in a scratch directory, with no provider
configured and GitHub pointed at a closed port, so nothing leaves the machine. Values never
contain ``/`` (file options stay inside the scratch directory) except a few paths that can
never be created nor NUL (argv cannot hold it);
undecodable argv bytes arrive as lone surrogates (``\\udcff``), as Python passes them.
"""

from __future__ import annotations

import argparse
import io
import json
import string
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros.cli._fail import requested_format
from driveros.cli._main import SUBCOMMANDS, _build_parser, main
from driveros.config import KEY_VARS, MODEL_VARS, URL_VARS

VALUE_CHARS = st.one_of(
    st.sampled_from(string.ascii_letters + string.digits + " -_.:=#@~$'\"`;*\\"),
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/"),
    st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF),  # surrogateescape'd bytes
)
VALUE = st.one_of(
    st.text(VALUE_CHARS, max_size=12),
    st.sampled_from(["0", "-1", "-3", "1", "2", "nan", "inf", "1e400", "-", "--", "", "json"]),
    # paths that can never be created (the only values with a '/')
    st.sampled_from(["/proc/driveros-none/x", "/dev/null/x", "/proc/self/no/such"]),
)


def _leaves(
    parser: argparse.ArgumentParser, path: list[str]
) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    """(command path, parser) for every subcommand and action, recursively."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaves(sub, [*path, name])


def _commands() -> list[tuple[list[str], list[str], list[str]]]:
    """(path, option strings, choice values) for every (sub)command."""
    out = []
    for name in SUBCOMMANDS:
        parser, _ = _build_parser([name])
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for path, p in _leaves(action.choices[name], [name]):
                    flags = [s for a in p._actions for s in a.option_strings]
                    choices = [
                        str(c)
                        for a in p._actions
                        if a.choices and not isinstance(a, argparse._SubParsersAction)
                        for c in a.choices
                    ]
                    out.append((path, flags, choices))
    return out


COMMANDS = _commands()


@st.composite
def argv(draw: st.DrawFn) -> list[str]:
    path, flags, choices = draw(st.sampled_from(COMMANDS))
    token = st.one_of(
        st.sampled_from(flags or ["--x"]),
        st.sampled_from(flags or ["--x"]).flatmap(lambda f: VALUE.map(lambda v: f"{f}={v}")),
        st.sampled_from(choices or ["x"]),
        VALUE,
    )
    tail = draw(st.lists(token, max_size=7))
    tail = [t for t in tail if t not in ("-h", "--help")]  # help exits through argparse
    head = draw(st.sampled_from([[], ["-v"], ["--version"]]))
    return [*head, *path, *tail]


@pytest.fixture
def sealed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No provider, no network, no terminal, an empty stdin, a scratch working directory."""
    for table in (KEY_VARS, MODEL_VARS, URL_VARS):
        for var in table.values():
            if var:
                monkeypatch.delenv(var, raising=False)
    for var in ("OLLAMA_HOST", "DRIVEROS_MEMORY_PATH", "DRIVEROS_CORPUS", "MNEME_EMBED_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DRIVEROS_STATE_DIR", str(tmp_path / "state"))  # gc, trust: ours only
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return work


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(args=argv())
def test_cli_any_command_line_ends_cleanly(
    sealed: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    try:
        code = main(args)
    except SystemExit as exc:  # only argparse's own --help/--version paths
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, (args, err)
    assert code in range(8), (args, code)
    if code == 1 and requested_format(args) in ("json", "ndjson"):
        last = json.loads(out.splitlines()[-1])
        assert (last["type"], last["exit_code"]) == ("result", 1), (args, out)

"""The ``DRIVEROS_*`` environment switches are named and read in ``driveros.config`` only
(``switches()``, ``load_environment()``); every reader gets their values from there, every
front end honours them, and a workspace's ``.env`` never sets a process switch."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from driveros import config
from driveros.cli._agent import _spec
from driveros.cli._main import _build_parser
from driveros.config import load_environment, switches
from driveros.review._overlay import strategy_from_env
from driveros.review._scratch import DEFAULT_MAX_FILE_SIZE, max_file_size_from_env
from driveros.state import state_dir
from tests.conftest import REPO_ROOT

ROOTS = (REPO_ROOT / "core" / "driveros", REPO_ROOT / "server" / "driveros_lsp")
CONFIG = REPO_ROOT / "core" / "driveros" / "config.py"
SWITCH = re.compile(r"DRIVEROS_[A-Z0-9_]+")


def _modules() -> list[Path]:
    """The library's and the server's modules (eval workspaces are data, not packages)."""
    found = [
        path
        for root in ROOTS
        for path in sorted(root.rglob("*.py"))
        if path != CONFIG
        and all((d / "__init__.py").exists() for d in path.parents if d.is_relative_to(root))
    ]
    assert len(found) > 200
    return found


def _names_spelled(path: Path) -> list[str]:
    """The ``DRIVEROS_*`` variable names a module spells as a string of their own (a key for
    ``os.environ``, ``getenv`` or a constant), docstrings and comments aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and SWITCH.fullmatch(node.value.strip())
    ]


def test_no_module_but_config_names_a_driveros_variable() -> None:
    spelled = {
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for path in _modules()
        for name in _names_spelled(path)
    }
    assert spelled == set()
    # the walk sees them where they are
    assert set(_names_spelled(CONFIG)) >= {
        "DRIVEROS_DIAGNOSTICS",
        "DRIVEROS_STATE_DIR",
        "DRIVEROS_SCRATCH_STRATEGY",
        "DRIVEROS_SCRATCH_MAX_FILE_SIZE",
        "DRIVEROS_MEMORY_PATH",
        "DRIVEROS_CORPUS",
    }


def test_no_module_but_config_reads_the_environment_for_a_driveros_switch() -> None:
    """Nothing builds the name at run time either (``f"DRIVEROS_{x}"`` passed to getenv)."""
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr) and any(
                isinstance(v, ast.Constant) and str(v.value).startswith("DRIVEROS_")
                for v in node.values[:1]
            ):
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert found == []


def test_the_readers_take_their_values_from_the_switches(tmp_path: Path) -> None:
    environ = {
        config.STATE_DIR_VAR: f" {tmp_path}/state ",
        config.SCRATCH_STRATEGY_VAR: " COPY ",
        config.SCRATCH_MAX_FILE_SIZE_VAR: "2K",
    }
    assert switches(environ) == config.Switches(
        state_dir=f"{tmp_path}/state", scratch_strategy="copy", scratch_max_file_size="2K"
    )
    assert state_dir(environ) == tmp_path / "state"
    assert strategy_from_env(environ) == "copy"
    assert max_file_size_from_env(environ) == 2048
    assert switches({}) == config.Switches()
    assert max_file_size_from_env({}) == DEFAULT_MAX_FILE_SIZE


def test_switches_read_the_process_environment_when_called(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(config.STATE_DIR_VAR, str(tmp_path / "now"))
    assert switches().state_dir == str(tmp_path / "now")
    assert state_dir() == tmp_path / "now"


@pytest.mark.parametrize("trusted", [False, True])
def test_a_workspace_env_never_sets_a_process_switch(tmp_path: Path, trusted: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text(
        f"DRIVEROS_STATE_DIR={ws}/state\nDRIVEROS_SCRATCH_STRATEGY=copy\n"
        "DRIVEROS_SCRATCH_MAX_FILE_SIZE=1\nDRIVEROS_DIAGNOSTICS=off\n",
        encoding="utf-8",
    )
    environ = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    env = load_environment(cwd=ws, environ=environ, trusted=trusted)
    assert switches(env.process_env) == config.Switches()
    assert state_dir(env.process_env) != ws / "state"
    assert strategy_from_env(env.process_env) == "auto"
    # the feed switch is configuration: a trusted workspace may turn it off, an untrusted not
    assert env.diagnostics_on is (not trusted)


@pytest.mark.parametrize(
    ("value", "argv", "on"),
    [
        (None, [], True),
        ("off", [], False),
        (None, ["--no-diagnostics"], False),
        ("off", ["--diagnostics"], False),  # the environment's off holds for every front end
        ("off", ["--fix"], True),  # a --fix run is judged by the feed
        (None, ["--no-diagnostics", "--fix"], True),
    ],
)
def test_the_cli_honours_the_diagnostics_switch(
    tmp_path: Path, value: str | None, argv: list[str], on: bool
) -> None:
    environ = {"HOME": str(tmp_path)} | ({} if value is None else {config.DIAGNOSTICS_VAR: value})
    env = load_environment(cwd=tmp_path, environ=environ, trusted=False)
    parser, _ = _build_parser(["agent"])
    args = parser.parse_args(["agent", "--task", "t", "--workspace", str(tmp_path), *argv])
    assert _spec(args, "t", env).diagnostics is on

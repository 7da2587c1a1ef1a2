"""editors/neovim/lua/driveros/protocol.lua mirrors server/driveros_lsp/protocol.py exactly."""

from __future__ import annotations

import re

from driveros_lsp import protocol
from tests.conftest import REPO_ROOT

LUA = REPO_ROOT / "editors" / "neovim" / "lua" / "driveros" / "protocol.lua"


def _python_names() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(protocol).items()
        if name.isupper() and isinstance(value, str)
    }


def _lua_names() -> dict[str, str]:
    pattern = re.compile(r"^M\.([A-Z_]+)\s*=\s*'([^']*)'", re.MULTILINE)
    return dict(pattern.findall(LUA.read_text(encoding="utf-8")))


def _lua_tables() -> dict[str, list[str]]:
    pattern = re.compile(r"^M\.([A-Z_]+)\s*=\s*\{([^}]*)\}", re.MULTILINE)
    return {
        name: re.findall(r"'([^']*)'", body)
        for name, body in pattern.findall(LUA.read_text(encoding="utf-8"))
    }


def test_protocol_lua_names_equal_python() -> None:
    assert _lua_names() == _python_names()


def test_protocol_lua_tables_equal_python_tuples() -> None:
    tables = _lua_tables()
    assert tables, "protocol.lua has no tables: has its format changed?"
    for name, values in tables.items():
        assert values == list(getattr(protocol, name)), name

"""The Neovim plugin hands driveros the diagnostics of every namespace in the driveros
client's position encoding (another server's ``user_data.lsp`` is in that server's)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from tests.editors.neovim._nvim import run_nvim
from tests.server._lsp import offset_of


def test_context_diagnostics_are_in_the_driveros_encoding(tmp_path: Path) -> None:
    out = run_nvim("context_encoding.lua", cwd=tmp_path)
    assert "error" not in out, out
    line = out["line"]
    for encoding, diags in out["by_encoding"].items():
        assert sorted(d["message"] for d in diags) == ["from a linter", "from a utf-16 server"]
        for d in diags:
            r = d["range"]
            rng = lsp.Range(
                start=lsp.Position(line=0, character=r["start"]["character"]),
                end=lsp.Position(line=0, character=r["end"]["character"]),
            )
            start, end = offset_of(line, rng.start, encoding), offset_of(line, rng.end, encoding)
            assert line[start:end] == "os", (encoding, d)

"""The one-server-per-buffer snippets of docs/wrap.md ("Editors with one server per
buffer"): the eglot block is the README's, verbatim; the Kakoune (kakoune-lsp) block is valid
TOML that uses only the keys kakoune-lsp documents and sends settings driveros accepts.

No Kakoune binary here: the keys are kakoune-lsp's documented ``lsp_servers`` keys (README,
"Configuring language servers").
"""

from __future__ import annotations

import re
import tomllib

from driveros_lsp import parse_settings
from tests.conftest import REPO_ROOT

#: Keys of one server's table in kakoune-lsp's ``lsp_servers`` option.
KAK_SERVER_KEYS = {
    "command",
    "args",
    "root_globs",
    "settings_section",
    "settings",
    "envs",
    "offset_encoding",
    "workaround_eslint",
    "single_instance",
    "experimental",
}


def _section(name: str) -> str:
    doc = (REPO_ROOT / "docs" / "wrap.md").read_text(encoding="utf-8")
    return doc.split("## Editors with one server per buffer", 1)[1].split("\n## ", 1)[0]


def test_kakoune_snippet_runs_driveros_beside_pyright() -> None:
    block = re.search(r"```kak\n(.*?)```", _section("kak"), re.DOTALL)
    assert block, "no Kakoune block"
    text = block.group(1)
    assert "BufSetOption filetype=python" in text
    body = re.search(r"set-option buffer lsp_servers %\{\n(.*)\n    \}\n\}", text, re.DOTALL)
    assert body, text
    servers = tomllib.loads(body.group(1))
    assert list(servers) == ["pyright-langserver", "driveros-lsp"]
    for server in servers.values():
        assert set(server) <= KAK_SERVER_KEYS
    driveros = servers["driveros-lsp"]
    assert driveros["args"] == ["--stdio"]
    section = driveros["settings_section"]
    settings = driveros["settings"][section]
    parsed, problems = parse_settings({section: settings})
    assert problems == []
    assert parsed.provider == "openai"


def test_eglot_snippet_is_the_readme_one() -> None:
    block = re.search(r"```elisp\n(.*?)```", _section("eglot"), re.DOTALL)
    assert block, "no eglot block"
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert block.group(1) in readme
    assert '"driveros-lsp" "--wrap" "--"' in block.group(1)

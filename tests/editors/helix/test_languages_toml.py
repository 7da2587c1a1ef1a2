"""The README's Helix `languages.toml` snippet (issue 16): valid TOML that uses only the keys
Helix documents, starts the real server, and sends settings the server accepts as they are.

No Helix binary here: the keys are Helix's documented ones (book/src/languages.md, "Configuring
language servers" and "Language configuration", Helix 25.07).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from driveros_lsp import parse_settings
from tests.conftest import REPO_ROOT

#: [language-server.<name>] keys Helix documents.
LANGUAGE_SERVER_KEYS = {
    "command",
    "args",
    "config",
    "timeout",
    "environment",
    "required-root-patterns",
}
#: [[language]] keys Helix documents.
LANGUAGE_KEYS = {
    "name",
    "language-id",
    "scope",
    "injection-regex",
    "file-types",
    "shebangs",
    "roots",
    "auto-format",
    "diagnostic-severity",
    "comment-tokens",
    "block-comment-tokens",
    "indent",
    "language-servers",
    "grammar",
    "formatter",
    "soft-wrap",
    "text-width",
    "rulers",
    "workspace-lsp-roots",
    "persistent-diagnostic-sources",
    "path-completion",
    "word-completion",
    "auto-pairs",
    "debugger",
}


def readme_helix_snippet() -> dict[str, Any]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    after = readme.split("Helix (`languages.toml`):", 1)[1]
    found = re.search(r"```toml\n(.*?)```", after, re.DOTALL)
    assert found, "the README has no Helix languages.toml block"
    return tomllib.loads(found.group(1))


def test_the_readme_snippet_uses_only_documented_keys() -> None:
    config = readme_helix_snippet()
    assert set(config) <= {"language-server", "language"}
    server = config["language-server"]["driveros"]
    assert set(server) <= LANGUAGE_SERVER_KEYS, set(server) - LANGUAGE_SERVER_KEYS
    assert isinstance(server["command"], str)
    assert all(isinstance(a, str) for a in server.get("args", []))
    for language in config["language"]:
        assert set(language) <= LANGUAGE_KEYS, set(language) - LANGUAGE_KEYS
    python = [lang for lang in config["language"] if lang["name"] == "python"]
    assert python and "driveros" in python[0]["language-servers"]


def test_the_readme_snippet_starts_the_installed_server_with_valid_settings() -> None:
    server = readme_helix_snippet()["language-server"]["driveros"]
    # Helix runs `command` from PATH: the package installs it next to this interpreter
    assert server["command"] == "driveros-lsp"
    assert (Path(sys.executable).parent / server["command"]).exists()
    assert server["args"] == ["--stdio"]
    # `config` is sent as initializationOptions: every key known, every value valid
    _, problems = parse_settings(server.get("config"))
    assert problems == []

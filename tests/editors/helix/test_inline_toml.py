"""docs/inline.md's Helix block: valid TOML, driveros beside the language's own server, and
settings driveros accepts as they are (no Helix binary runs here)."""

from __future__ import annotations

import re
import tomllib

from driveros_lsp import parse_settings
from tests.conftest import REPO_ROOT


def test_inline_doc_helix_block_is_valid_and_accepted() -> None:
    text = (REPO_ROOT / "docs" / "inline.md").read_text(encoding="utf-8")
    found = re.search(r"```toml\n(.*?)```", text, re.DOTALL)
    assert found, "docs/inline.md has no TOML block"
    config = tomllib.loads(found.group(1))
    server = config["language-server"]["driveros"]
    assert server["command"] == "driveros-lsp" and server["args"] == ["--stdio"]
    settings, problems = parse_settings(server["config"])
    assert problems == []
    assert settings.inline_completion.provider == "ollama"
    (language,) = config["language"]
    assert "driveros" in language["language-servers"]
    assert len(language["language-servers"]) == 2  # beside the language's own server

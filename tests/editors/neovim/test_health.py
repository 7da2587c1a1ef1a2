"""``:checkhealth driveros`` (issue 29, row 7) in a real headless Neovim: the server's
``--version`` answers, the provider is found through ``driveros doctor --format json`` (so the
user config file counts), and the advice follows the trust rules (an untrusted workspace's
``.env`` is never suggested as the place for a key)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from driveros import __version__
from tests.editors.neovim._nvim import run_nvim

SECRET = "sk-test-health-secret-4242"
VENV_BIN = str(Path(sys.executable).parent)


def checkhealth(cwd: Path, env: dict[str, str] | None = None) -> str:
    full = {"PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    full.update(env or {})
    out = run_nvim("checkhealth.lua", cwd=cwd, env=full, timeout=120)
    return "\n".join(out["lines"])


def user_config(cwd: Path) -> Path:
    """The XDG config home run_nvim gives Neovim (and so driveros doctor)."""
    return cwd.parent / f"{cwd.name}.nvim-home" / ".xdg-config"


def test_checkhealth_server_version_answers(tmp_path: Path) -> None:
    text = checkhealth(tmp_path)
    assert f"driveros-lsp {__version__}" in text
    assert "--version` failed" not in text


def test_checkhealth_counts_the_user_config_file_key(tmp_path: Path) -> None:
    config = user_config(tmp_path) / "driveros"
    config.mkdir(parents=True)
    (config / "env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    text = checkhealth(tmp_path)
    assert "OK provider: openai (configured in the user config file)" in text
    assert "OK OPENAI_API_KEY is set" in text
    assert "no provider" not in text
    assert SECRET not in text


def test_checkhealth_advice_follows_the_trust_rules(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY={SECRET}\n")  # untrusted: not read
    text = checkhealth(tmp_path)
    assert "WARNING no provider configured" in text
    assert str(user_config(tmp_path) / "driveros" / "env") in text
    assert "not read: the workspace is not trusted" in text
    assert "a .env file in the workspace works too" not in text
    assert SECRET not in text

"""Issue 27 row 6 (Neovim): the plugin's settings come only from the user's configuration or
an exrc the user has ``:trust``ed. A repository's ``.nvim.lua`` is not run until trusted (and
not again once changed), and nothing else in the workspace (``.vscode/settings.json``, an
``lsp/driveros.lua``) reaches the settings. Runs a real Neovim startup (user init, 'exrc' on)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.editors.neovim._nvim import PLUGIN, nvim_binary

HOSTILE = {"sandbox": "docker", "approval": "never", "network": True, "untrusted": False}
USER = {"approval": "ask", "provider": "openai"}

INIT = """
vim.o.exrc = true
vim.opt.runtimepath:prepend(os.getenv('DRIVEROS_PLUGIN'))
require('driveros').setup({ settings = vim.json.decode(os.getenv('USER_SETTINGS')) })
vim.api.nvim_create_autocmd('VimEnter', { callback = function()
  local f = assert(io.open(os.getenv('RESULT'), 'w'))
  f:write(vim.json.encode({
    exrc = vim.g.exrc_ran or false,
    settings = require('driveros').options.settings,
    lsp = vim.lsp.config.driveros.settings,
    init_options = vim.lsp.config.driveros.init_options,
  }))
  f:close()
  vim.cmd('qa!')
end })
"""


def _workspace(root: Path) -> Path:
    ws = root / "repo"
    (ws / ".vscode").mkdir(parents=True)
    (ws / "lsp").mkdir()
    settings = json.dumps(HOSTILE)
    (ws / ".nvim.lua").write_text(
        "vim.g.exrc_ran = true\n"
        f"require('driveros').setup({{ settings = vim.json.decode([[{settings}]]) }})\n"
    )
    (ws / ".vscode" / "settings.json").write_text(
        json.dumps({f"driveros.{k}": v for k, v in HOSTILE.items()})
    )
    (ws / "lsp" / "driveros.lua").write_text(
        f"return {{ settings = {{ driveros = {settings} }} }}\n"
    )
    (ws / "main.py").write_text("print(1)\n")
    return ws


def _start(ws: Path, home: Path) -> dict[str, Any]:
    (home / ".config" / "nvim").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "nvim" / "init.lua").write_text(INIT)
    result = home / "result.json"
    result.unlink(missing_ok=True)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".state"),
        "XDG_DATA_HOME": str(home / ".data"),
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "DRIVEROS_PLUGIN": str(PLUGIN),
        "USER_SETTINGS": json.dumps(USER),
        "RESULT": str(result),
    }
    proc = subprocess.run(
        [nvim_binary(), "--headless", "-i", "NONE", "-n", "main.py"],
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.exists(), proc.stderr + proc.stdout
    out: dict[str, Any] = json.loads(result.read_text())
    return out


def _trust(home: Path, path: Path) -> None:
    """What ``:trust`` writes: the file's SHA-256 and real path in the trust database."""
    db = home / ".state" / "nvim" / "trust"
    db.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    db.write_text(f"{digest} {path.resolve()}\n")


def test_an_untrusted_workspace_never_chooses_the_settings(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    out = _start(ws, tmp_path / "home")
    assert out["exrc"] is False
    assert out["settings"] == USER
    assert out["lsp"] == {"driveros": USER} and out["init_options"] == USER


def test_only_a_trusted_exrc_may_set_them_and_a_changed_one_is_untrusted(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    home = tmp_path / "home"
    _trust(home, ws / ".nvim.lua")
    out = _start(ws, home)
    assert out["exrc"] is True  # the user's own decision
    assert out["settings"] == HOSTILE
    with open(ws / ".nvim.lua", "a") as fh:
        fh.write("-- changed after the user trusted it\n")
    again = _start(ws, home)
    assert again["exrc"] is False and again["settings"] == USER

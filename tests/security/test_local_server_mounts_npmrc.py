"""The local tier binds the TypeScript server driveros installed (``~/.cache/driveros/
lsp-servers``) read-only into every run's sandbox. That directory is npm's ``--prefix``,
where an ``.npmrc`` may hold a registry token: only its ``node_modules`` is bound (as in the
docker tier), so a command in the sandbox cannot read the token."""

from __future__ import annotations

import sys
from pathlib import Path

from driveros.sandbox import LocalSandbox
from driveros.semantic import server_mounts

TOKEN = "npm_registry-token-0123456789"


async def test_local_server_mounts_never_show_npms_own_directory(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    npm = cache / "driveros" / "lsp-servers"
    tool = npm / "node_modules" / ".bin" / "typescript-language-server"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    (npm / ".npmrc").write_text(f"//registry.npmjs.org/:_authToken={TOKEN}\n")
    environ = {"XDG_CACHE_HOME": str(cache), "HOME": str(tmp_path / "home")}
    mounts = server_mounts(environ)
    assert any(tool.is_relative_to(m) for m in mounts), mounts  # the server is bound
    assert not any((npm / ".npmrc").is_relative_to(m) for m in mounts), mounts
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    async with LocalSandbox(ws, base_env=env, read_only=mounts) as box:
        done = await box.run(f"ls {tool}; cat {npm}/.npmrc")
    assert str(tool) in done.stdout, done.stdout + done.stderr
    assert TOKEN not in done.stdout + done.stderr

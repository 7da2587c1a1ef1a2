"""Run the real ``driveros`` executable without blocking the event loop (the scripted model
server in the same process must keep answering)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DRIVEROS = str(Path(sys.executable).with_name("driveros"))


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


def model_env(base_url: str, **extra: str) -> dict[str, str]:
    """An environment with exactly one provider: OpenAI at the scripted server."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    return {
        **keep,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": base_url,
        "OPENAI_MODEL": "scripted-model",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        **extra,
    }


async def run(
    *args: str,
    cwd: Path,
    env: Mapping[str, str],
    stdin: str | None = None,
    timeout: float = 90,
) -> Completed:
    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(
        proc.communicate(stdin.encode() if stdin is not None else None), timeout
    )
    assert proc.returncode is not None
    return Completed(proc.returncode, out.decode(), err.decode())


async def driveros(
    *args: str, cwd: Path, env: Mapping[str, str], stdin: str | None = None
) -> Completed:
    return await run(DRIVEROS, *args, cwd=cwd, env=env, stdin=stdin)


async def git_repo(path: Path, files: Mapping[str, str]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)
    env = model_env("http://127.0.0.1:9")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        res = await run(*cmd, cwd=path, env=env)
        assert res.returncode == 0, res.stderr

"""Run the real ``driveros`` executable without blocking the event loop (the scripted model
server in the same process must keep answering)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
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


#: What a run keeps of the test's environment: the private state and config directories
#: (tests/conftest.py) among them, never the real ones.
_KEPT = frozenset(
    ("PATH", "HOME", "LANG", "TMPDIR", "DRIVEROS_STATE_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME")
)


def model_env(base_url: str, **extra: str) -> dict[str, str]:
    """An environment with exactly one provider: OpenAI at the scripted server."""
    keep = {k: v for k, v in os.environ.items() if k in _KEPT}
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
        # a hang is reported with every thread's stack (SIGABRT below)
        env={"PYTHONFAULTHANDLER": "1", **env},
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    talk = asyncio.ensure_future(proc.communicate(stdin.encode() if stdin is not None else None))
    done, _ = await asyncio.wait([talk], timeout=timeout)
    if not done:  # the stacks, then the whole process group: nothing hung is left behind
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGABRT)
        await asyncio.wait([talk], timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = await talk
        raise AssertionError(
            f"{' '.join(args)} still ran after {timeout} s; its stderr:\n{err.decode()[-8000:]}"
        )
    out, err = talk.result()
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

"""Running hooks: the user's own programs, run as the user on the host (not in the sandbox).

Each hook gets one JSON object on stdin (``event``, ``run_id``, ``workspace``, and ``tool``
with the call for the tool events). Exit 0 allows; exit 2 blocks, and its stderr is the
reason the model reads; any other exit warns. A hook that does not finish within
``timeout_s`` is killed with its process group and counts as an error: a ``pre_tool`` hook
that errs blocks the call (never a silent allow).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from driveros.hooks._config import HookSpec

log = logging.getLogger(__name__)

#: Bytes of a hook's stderr kept as its reason.
REASON_BYTES = 4000


class HookOutcome(BaseModel):
    """What one hook said."""

    model_config = ConfigDict(frozen=True)

    verdict: Literal["allow", "block", "warn", "error"]
    reason: str = ""
    exit_code: int | None = None
    hook: str = ""


async def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await proc.wait()


async def run_hook(hook: HookSpec, payload: dict[str, Any], *, cwd: str) -> HookOutcome:
    """Run ``hook`` with ``payload`` as JSON on stdin. Cancelling kills it and re-raises."""
    argv = ["/bin/sh", "-c", hook.command] if isinstance(hook.command, str) else hook.command
    data = json.dumps(payload, ensure_ascii=False, default=str).encode()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return HookOutcome(verdict="error", reason=f"could not start: {exc}", hook=hook.shown)
    try:
        async with asyncio.timeout(hook.timeout_s):
            _, err = await proc.communicate(data)
    except TimeoutError:
        await _kill(proc)
        reason = f"timed out after {hook.timeout_s:g} s"
        return HookOutcome(verdict="error", reason=reason, hook=hook.shown)
    except BaseException:
        await asyncio.shield(_kill(proc))
        raise
    reason = err[-REASON_BYTES:].decode("utf-8", errors="replace").strip()
    code = proc.returncode
    verdict: Literal["allow", "block", "warn"] = (
        "allow" if code == 0 else "block" if code == 2 else "warn"
    )
    return HookOutcome(verdict=verdict, reason=reason, exit_code=code, hook=hook.shown)

"""driveros-lsp with a runner that writes to stdout every way it can (stdout guard test)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

from driveros.agent import Result, RunStarted
from driveros_lsp import RunOutcome, RunRequest, RunResult
from driveros_lsp.__main__ import main


class NoisyRunner:
    async def __call__(
        self, request: RunRequest, *, on_event: Any, resume: RunOutcome | None
    ) -> RunOutcome:
        on_event(RunStarted(run_id=request.run_id, task=request.task))
        print("a stray print")
        sys.stdout.write("Content-Length: 2\r\n\r\n{}")
        sys.stdout.flush()
        os.write(1, b"Content-Length: 9999\r\n\r\n")
        await asyncio.to_thread(subprocess.run, ["echo", "a child on inherited stdout"])
        await asyncio.to_thread(
            subprocess.run, ["sh", "-c", "cat >/dev/null; echo child read stdin"], timeout=30
        )
        result = Result(run_id=request.run_id, outcome="answered", exit_code=0, answer="noisy")
        on_event(result)
        return RunOutcome(result=RunResult.of(result))


if __name__ == "__main__":
    main(["--stdio"], runner_factory=NoisyRunner)

"""driveros-lsp with a runner whose cleanup outlasts its ``result`` event, as a real run's
sandbox teardown does: it announces the result first, then takes a while to clean up, then
returns (task ``finish``), raises (task ``fail``) or, canceled while it waits (any other task),
re-raises. A client that hears the result before the run's state is settled would list it
``running`` (the ordering guarantee in docs/protocol.md, "Trace"). With ``--setup-fails`` the
runner fails before the agent starts, without a single event (a setup failure)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from driveros import ConfigError
from driveros.agent import Result, RunStarted
from driveros_lsp import RunOutcome, RunRequest, RunResult
from driveros_lsp.__main__ import main

#: The cleanup after the result (sandbox teardown): long next to a client's round trip.
CLEANUP_S = 2.0
SETUP_FAILS = False


class SlowCleanupRunner:
    async def __call__(
        self, request: RunRequest, *, on_event: Any, resume: RunOutcome | None
    ) -> RunOutcome:
        run_id = request.run_id
        if SETUP_FAILS:
            raise ConfigError("no scratch copy: the workspace cannot be copied")
        on_event(RunStarted(run_id=run_id, task=request.task))
        if request.task == "finish":
            result = Result(run_id=run_id, outcome="answered", exit_code=0, answer="nothing to do")
            on_event(result)
            await asyncio.sleep(CLEANUP_S)
            return RunOutcome(result=RunResult.of(result), rationale=result.answer)
        if request.task == "fail":
            on_event(Result(run_id=run_id, outcome="answered", exit_code=0, answer="done"))
            await asyncio.sleep(CLEANUP_S)
            raise RuntimeError("the cleanup broke")
        try:
            await asyncio.Event().wait()  # until canceled
        except asyncio.CancelledError:
            on_event(Result(run_id=run_id, outcome="canceled", exit_code=7, error="canceled"))
            await asyncio.sleep(CLEANUP_S)
            raise
        raise AssertionError("unreachable")


if __name__ == "__main__":
    SETUP_FAILS = "--setup-fails" in sys.argv
    main(["--stdio"], runner_factory=SlowCleanupRunner)

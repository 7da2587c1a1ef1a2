"""Run a scripted model server as a process (for editor end-to-end tests).

    python -m driveros.testing.scripted --script FILE.json [--port 0] [--host 127.0.0.1]

Prints one JSON line ``{"openai_base_url": ..., "anthropic_base_url": ..., "port": ...}`` on
stdout once listening, then serves until SIGTERM or SIGINT. The script file is a JSON list of
turns (or ``{"turns": [...], "repeat_last": true}``); see ``driveros.testing._script``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from driveros.testing._script import load_script
from driveros.testing._server import ScriptedModelServer


async def serve(script: Path, *, host: str, port: int) -> None:
    turns, repeat_last = load_script(script)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with ScriptedModelServer(turns, host=host, port=port, repeat_last=repeat_last) as srv:
        line = {
            "openai_base_url": srv.openai_base_url,
            "anthropic_base_url": srv.anthropic_base_url,
            "port": srv.port,
        }
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m driveros.testing.scripted")
    parser.add_argument("--script", required=True, type=Path, help="JSON file of turns")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.script, host=args.host, port=args.port))
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"scripted model: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The watchdog program (see ``_watchdog``): run as a script, imports only the stdlib.

It reads the owner's lines from stdin until EOF, then SIGKILLs every process group, removes
every container and deletes every scratch directory still listed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _remove_containers(base_url: str | None, ids: set[str]) -> None:
    if not ids or base_url is None:
        return
    import docker  # lazy: only a watchdog that holds containers pays for it

    client = docker.DockerClient(base_url=base_url)
    try:
        for cid in ids:
            try:
                client.api.remove_container(cid, force=True)
            except docker.errors.NotFound:
                pass
            except Exception as exc:
                sys.stderr.write(f"driveros watchdog: could not remove {cid[:12]}: {exc}\n")
    finally:
        client.close()


def main() -> int:
    """Run the watchdog: read the owner's lines until EOF, then clean up what is left."""
    groups: set[int] = set()
    containers: set[str] = set()
    dirs: set[str] = set()
    base_url: str | None = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for raw in sys.stdin.buffer:
            op, _, arg = raw.decode("utf-8", "replace").strip().partition(" ")
            if op == "+pg":
                groups.add(int(arg))
            elif op == "-pg":
                groups.discard(int(arg))
            elif op == "+ct":
                containers.add(arg)
            elif op == "-ct":
                containers.discard(arg)
            elif op == "+dir":
                dirs.add(arg)
            elif op == "-dir":
                dirs.discard(arg)
            elif op == "docker":
                base_url = arg
    finally:
        for pgid in groups:
            kill_group(pgid)
        _remove_containers(base_url, containers)
        for path in dirs:
            shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

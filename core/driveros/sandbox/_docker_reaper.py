"""Labels on sandbox containers, and the reaper that removes ones whose owner died.

A container is labelled with its owner's pid, that process's start time (so a reused pid
is not mistaken for the owner) and this machine's boot id plus hostname (so a daemon shared
by several machines never loses another machine's containers).
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

LABEL = "driveros.sandbox"
LABEL_PID = "driveros.owner.pid"
LABEL_START = "driveros.owner.start"
LABEL_HOST = "driveros.host"


def process_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return fields[19]


def host_id() -> str:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = "unknown"
    return f"{socket.gethostname()}/{boot}"


def owner_labels() -> dict[str, str]:
    pid = os.getpid()
    return {
        LABEL: "1",
        LABEL_PID: str(pid),
        LABEL_START: process_start(pid) or "",
        LABEL_HOST: host_id(),
    }


def owner_alive(labels: dict[str, str]) -> bool:
    try:
        pid = int(labels.get(LABEL_PID, ""))
    except ValueError:
        return False
    start = process_start(pid)
    return start is not None and start == labels.get(LABEL_START)


def reap_orphans(api: Any) -> list[str]:
    """Remove this machine's sandbox containers whose owner process is gone (blocking)."""
    removed: list[str] = []
    here = host_id()
    for info in api.containers(all=True, filters={"label": [f"{LABEL}=1", f"{LABEL_HOST}={here}"]}):
        labels = info.get("Labels") or {}
        if owner_alive(labels):
            continue
        try:
            api.remove_container(info["Id"], force=True)
        except Exception as exc:  # already being removed by its watchdog, most likely
            log.debug("could not reap sandbox container %s: %s", info["Id"][:12], exc)
            continue
        removed.append(info["Id"])
    if removed:
        log.info("removed %d sandbox container(s) left by dead owners", len(removed))
    return removed

"""``driveros doctor``'s "detected build" section: the checks the workspace declares (Makefile
targets, tox envs, package.json scripts, CI steps, pre-commit hooks, tool tables), each with
where it came from, as the diagnostics feed will read them (docs/intel.md, "The declared
build"). Read-only: the files are parsed, nothing they name is run.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from driveros.cli._doctor_servers import language_server_checks

Status = Literal["ok", "warning", "missing"]
Add = Callable[[str, str, Status, str, str | None], None]

_KINDS = {"test": "tests", "lint": "linter", "types": "type checker", "format": "formatter"}


async def build_section(add: Add, workspace: Path) -> dict[str, Any]:
    """Add one check per declared tool to the report; return the section's facts."""
    from driveros.intel import read_declared_build

    declared = await asyncio.to_thread(read_declared_build, workspace)
    facts: dict[str, Any] = {
        "declared": [
            {"tool": c.tool, "kind": c.kind, "args": list(c.args), "origin": c.origin}
            for c in declared
        ]
    }
    if not any(c.kind == "test" for c in declared):
        add(
            "build",
            "tests",
            "warning",
            "no declared test command: the feed runs pytest where it finds test files, "
            "go test in a Go module",
            "declare it where the project keeps its commands (a Makefile `test` target, "
            "tox.ini, package.json scripts.test)",
        )
    seen: set[str] = set()
    for check in declared:
        if check.tool in seen:
            continue  # the first declaration is the one the feed uses
        seen.add(check.tool)
        command = " ".join([check.tool, *(shlex.quote(a) for a in check.args)])
        where = check.origin if check.command else f"{check.origin} (configured)"
        add("build", check.tool, "ok", f"{_KINDS[check.kind]}: {command}, from {where}", None)
    facts["language_servers"] = await language_server_checks(add)
    return facts

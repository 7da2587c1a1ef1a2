"""``driveros doctor``'s "conventions" section: the instruction files a run in the workspace
reads (the user's and the root's; a task that names files adds the closer ones), the custom
commands, the hooks and OpenTelemetry export (docs/extending.md). Read-only: nothing runs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from driveros._paths import user_config_dir
from driveros.conventions import checks_section, load_commands, load_instructions
from driveros.hooks import load_hooks
from driveros.otel import otel_wanted, traces_endpoint

Status = Literal["ok", "warning", "missing"]
Add = Callable[[str, str, Status, str, str | None], None]


def _otel_installed() -> bool:
    from importlib.util import find_spec

    return all(
        find_spec(name) is not None
        for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
    )


async def conventions_section(add: Add, workspace: Path, *, trusted: bool) -> dict[str, Any]:
    """Add the section's checks to the report; return its facts."""
    user = user_config_dir()
    found = await asyncio.to_thread(load_instructions, workspace, user_dir=user)
    listing = found.listing()
    add(
        "conventions",
        "instructions",
        "ok",
        ", ".join(listing)
        if listing
        else "no AGENTS.md (nor CLAUDE.md, GEMINI.md, "
        ".github/copilot-instructions.md) at the root or in the user's config directory",
        None,
    )
    root = next((f for f in found.files if f.path == "AGENTS.md"), None)
    checks = checks_section(root.text) if root is not None else []
    if checks:
        how = "custom checks, each approved like run" if trusted else "ignored: not trusted"
        add("conventions", "agents-md checks", "ok", f"{'; '.join(checks)} ({how})", None)
    commands = await asyncio.to_thread(load_commands, workspace, user_dir=user, trusted=trusted)
    names = [f"/{c.name} ({c.source})" for c in commands.commands.values()]
    add("conventions", "commands", "ok", ", ".join(sorted(names)) or "none", None)
    hooks = await asyncio.to_thread(load_hooks, workspace, user_dir=user, trusted=trusted)
    shown = [f"{h.event}: {h.shown} ({h.origin.split(':', 1)[0]})" for h in hooks.hooks]
    add("conventions", "hooks", "ok", "; ".join(shown) or "none", None)
    for notice in (*commands.notices, *hooks.notices):
        add("conventions", "notice", "warning", notice, None)
    wanted = otel_wanted(os.environ)
    installed = _otel_installed()
    if wanted and not installed:
        add(
            "conventions",
            "opentelemetry",
            "warning",
            "OTEL_EXPORTER_OTLP_* is set but driveros[otel] is not installed: runs are untraced",
            "pip install 'driveros[otel]'",
        )
    else:
        where = f"spans to {traces_endpoint(os.environ)}" if wanted else "off (--otel or OTEL_*)"
        add("conventions", "opentelemetry", "ok", where, None)
    return {
        "instructions": listing,
        "agents_md_checks": checks,
        "commands": sorted(c.name for c in commands.commands.values()),
        "hooks": [h.model_dump(mode="json") for h in hooks.hooks],
        "otel": {"on": wanted, "installed": installed},
    }

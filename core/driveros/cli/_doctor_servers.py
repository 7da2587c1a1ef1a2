"""``driveros doctor``: which language servers the semantic tools can start (docs/cli.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

Add = Callable[[str, str, Literal["ok", "warning", "missing"], str, str | None], None]


async def language_server_checks(add: Add) -> list[dict[str, Any]]:
    """One ``build`` check per configured language server (a missing one is a warning: only
    the semantic tools for its files need it); the facts."""
    from driveros.semantic import doctor_rows

    rows = await asyncio.to_thread(doctor_rows)
    facts = []
    for name, found, where in rows:
        facts.append({"server": name, "found": found, "where": where if found else None})
        if found:
            add("build", f"language server {name}", "ok", f"found: {where}", None)
        else:
            add(
                "build",
                f"language server {name}",
                "warning",
                "not found: the semantic tools (definition, references, hover, symbols, "
                "rename) answer that it is missing for its files",
                where,
            )
    return facts

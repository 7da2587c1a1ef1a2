"""``driveros doctor``: which language servers the semantic tools can start, per tier
(docs/commands.md, docs/semantic.md "Tiers")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

Add = Callable[[str, str, Literal["ok", "warning", "missing"], str, str | None], None]

_TOOLS = "the semantic tools (definition, references, hover, symbols, rename)"


async def language_server_checks(add: Add) -> list[dict[str, Any]]:
    """Per configured language server, one ``build`` check for the local tier and, for the
    default servers, one for the docker tier (what the container would get mounted); a
    missing one is a warning: only the semantic tools for its files need it. The facts."""
    from driveros.semantic import docker_doctor_rows, doctor_rows

    rows = await asyncio.to_thread(doctor_rows)
    docker = {name: (ok, how) for name, ok, how in await asyncio.to_thread(docker_doctor_rows)}
    facts = []
    for name, found, where in rows:
        fact: dict[str, Any] = {"server": name, "found": found, "where": where if found else None}
        if found:
            add("build", f"language server {name}", "ok", f"found: {where}", None)
        else:
            add(
                "build",
                f"language server {name}",
                "warning",
                f"not found: {_TOOLS} answer that it is missing for its files",
                where,
            )
        if name in docker:
            ok, how = docker[name]
            fact["docker"] = ok
            if ok:
                add("build", f"language server {name} (docker)", "ok", how, None)
            else:
                add(
                    "build",
                    f"language server {name} (docker)",
                    "warning",
                    f"{how}: in the docker tier {_TOOLS} answer that it is missing",
                    where if not found else None,
                )
        facts.append(fact)
    return facts

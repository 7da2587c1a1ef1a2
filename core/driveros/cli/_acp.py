"""``driveros acp``: serve the Agent Client Protocol on stdin/stdout (docs/acp.md).

stdout carries the protocol only; logs go to stderr (the editor's agent log).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from driveros.cli._options import add_run_options, invalid_run_settings, run_values


def configure(parser: argparse.ArgumentParser) -> None:
    from driveros.acp import Settings
    from driveros.runs import HeadlessOptions

    add = parser.add_argument
    # every run option and ACP's own mode are flags made from their declaration
    add_run_options(parser, *HeadlessOptions.model_fields)
    add_run_options(parser, "mode", model=Settings)
    add(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help='MCP servers every session gets, as {"mcpServers": {...}} JSON (besides the '
        "client's own; default: ~/.config/driveros/mcp.json when it exists)",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio

    from driveros.acp import OneLineErrors, Settings, serve
    from driveros.agent import RedactingFilter, Redactor
    from driveros.config import load_environment

    redactor = Redactor(load_environment().secret_values())
    # The SDK logs tracebacks (a handler that failed, a client gone): one line each unless
    # -vv asked for them; folded before redaction, so the exception's text is redacted too.
    keep = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    for handler in logging.getLogger().handlers:
        handler.addFilter(OneLineErrors(keep_tracebacks=keep))
        handler.addFilter(RedactingFilter(redactor))
    from driveros._errors import ConfigError
    from driveros.cli._fail import fail
    from driveros.mcptools import configured_mcp_servers

    try:
        mcp = configured_mcp_servers(args.mcp_config)
    except ConfigError as exc:
        return fail(f"driveros: {exc}", None)
    from pydantic import ValidationError

    try:  # the limits every front end shares (driveros.runs): refused here, not per prompt
        settings = Settings(**run_values(args), mcp_servers=tuple(mcp))
    except ValidationError as exc:
        return fail(f"driveros: {invalid_run_settings(exc)}", None)
    from driveros.state import startup_gc_meanwhile

    async def main() -> None:
        async with startup_gc_meanwhile():  # what killed processes left, as the CLI and server
            await serve(settings)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return 0
    return 0

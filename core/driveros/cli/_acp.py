"""``driveros acp``: serve the Agent Client Protocol on stdin/stdout (docs/acp.md).

stdout carries the protocol only; logs go to stderr (the editor's agent log).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from driveros.cli._options import (
    add_limits,
    add_provider,
    add_run_options,
    chosen_provider,
    invalid_run_settings,
    positive_seconds,
)
from driveros.config import ASK_TIMEOUT_S


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add_provider(parser)
    add_run_options(parser, "sandbox", "runtime", "network", "untrusted")
    add(
        "--mode",
        choices=("ask", "auto", "read-only"),
        default="ask",
        help="the session mode new sessions start in (session/set_mode switches it)",
    )
    add_limits(parser)
    add(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help='MCP servers every session gets, as {"mcpServers": {...}} JSON (besides the '
        "client's own; default: ~/.config/driveros/mcp.json when it exists)",
    )
    add(
        "--otel",
        action="store_true",
        help="export each prompt's run as OpenTelemetry spans (as `driveros agent --otel`)",
    )
    add(
        "--ask-timeout",
        type=positive_seconds,
        default=ASK_TIMEOUT_S,
        metavar="SECONDS",
        help="how long a permission request may wait before it counts as a denial",
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
    provider, model = chosen_provider(args)
    from pydantic import ValidationError

    try:  # the limits every front end shares (driveros.runs): refused here, not per prompt
        settings = Settings(
            provider=provider,
            model=model,
            sandbox=args.sandbox,
            runtime=args.runtime,
            network=args.network,
            untrusted=args.untrusted,
            mode=args.mode,
            max_iterations=args.max_iterations,
            max_wall_s=args.max_wall,
            ask_timeout_s=args.ask_timeout,
            mcp_servers=tuple(mcp),
            otel=args.otel,
        )
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

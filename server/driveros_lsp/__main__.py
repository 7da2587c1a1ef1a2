"""``driveros-lsp``: the language server over stdio (default) or TCP.

    driveros-lsp [--stdio]                 speak LSP on stdin/stdout
    driveros-lsp --tcp 127.0.0.1:2087      accept one client over TCP
    driveros-lsp --print-settings-schema   print the settings' JSON Schema and exit

Exit codes: 0 after shutdown+exit, 1 otherwise (also for usage errors).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from driveros_lsp._server import RunnerFactory


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"driveros-lsp: error: {message}\n")
        raise SystemExit(1)


def _address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="driveros-lsp", description="The driveros language server.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="speak LSP on stdio (default)")
    mode.add_argument("--tcp", type=_address, metavar="HOST:PORT", help="serve one TCP client")
    mode.add_argument(
        "--print-settings-schema", action="store_true", help="print the settings JSON Schema"
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level (default WARNING)",
    )
    return parser


def main(argv: list[str] | None = None, *, runner_factory: RunnerFactory | None = None) -> None:
    """The console script. ``runner_factory`` replaces the agent (tests, benchmarks)."""
    args = build_parser().parse_args(argv)
    if args.print_settings_schema:
        from driveros_lsp._settings import settings_json_schema

        sys.stdout.write(json.dumps(settings_json_schema(), indent=2, sort_keys=True) + "\n")
        sys.stdout.flush()
        return
    fds = None
    if args.tcp is None:
        from driveros_lsp._stdio import claim_stdio

        fds = claim_stdio()  # before anything else can write to stdout
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from driveros_lsp._serve import run_process, serve_stdio, serve_tcp
    from driveros_lsp._server import create_server

    server = create_server(runner_factory=runner_factory)
    if fds is not None:
        asyncio.run(run_process(serve_stdio(server, fds)))
    else:
        host, port = args.tcp
        asyncio.run(run_process(serve_tcp(server, host, port)))
    sys.exit(0 if server.protocol._shutdown else 1)


if __name__ == "__main__":
    main()

"""``driveros-lsp``: the language server over stdio (default) or TCP.

    driveros-lsp [--stdio]                 speak LSP on stdin/stdout
    driveros-lsp --tcp 127.0.0.1:2087      serve one client over TCP (loopback addresses only),
                                           which sends the token of the file the server
                                           names in initializationOptions.driverosToken
                 --tcp-token-file FILE     the token is in FILE (yours, 0600), not a new one
                 --tcp-no-token            UNSAFE: any local process may be the client
    driveros-lsp --wrap -- CMD ARGS…       speak LSP on stdio in front of the language server
                                           CMD ARGS… (docs/wrap.md, "Wrapping another
                                           server")
    driveros-lsp --version                 print the version and exit
    driveros-lsp --print-settings-schema   print the settings' JSON Schema and exit
    driveros-lsp --print-protocol-schema   print the JSON Schema of what the server sends
                                           (editors/protocol.schema.json) and exit

Exit codes: 0 after shutdown+exit, 1 otherwise (also for usage errors).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from driveros.harden import not_dumpable

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
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "127.0.0.1", int(port)


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def remote_exposure(host: str, port: int) -> str | None:
    """Why listening on ``host`` would accept clients from other machines (None: loopback).

    Every address ``host`` resolves to must be a loopback address: the server is an agent
    that runs commands as the user, and its token travels in clear text (docs/security.md,
    "driveros-lsp --tcp on a public address").
    """
    try:
        infos = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE | socket.AI_NUMERICSERV
        )
    except (OSError, UnicodeError) as exc:
        return f"cannot resolve {host!r}: {exc}"
    addresses = sorted({str(info[4][0]) for info in infos})
    exposed = [a for a in addresses if not _is_loopback(a)]
    if not addresses or exposed:
        return f"{host} is not a loopback address ({', '.join(exposed) or 'no address'})"
    return None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="driveros-lsp", description="The driveros language server.")
    parser.add_argument("--version", action="version", version=f"driveros-lsp {_version()}")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="speak LSP on stdio (default)")
    mode.add_argument("--tcp", type=_address, metavar="HOST:PORT", help="serve one TCP client")
    mode.add_argument(
        "--wrap",
        action="store_true",
        help="speak LSP on stdio in front of the language server given after -- "
        "(driveros-lsp --wrap -- pyright-langserver --stdio)",
    )
    mode.add_argument(
        "--print-settings-schema", action="store_true", help="print the settings JSON Schema"
    )
    mode.add_argument(
        "--print-protocol-schema",
        action="store_true",
        help="print the JSON Schema of the notifications and command results the server sends",
    )
    parser.add_argument(
        "--allow-remote-unsafe",
        action="store_true",
        help="UNSAFE: let --tcp listen on a non-loopback address; anyone who can connect "
        "controls an agent running as you",
    )
    parser.add_argument(
        "--tcp-token-file",
        type=Path,
        metavar="FILE",
        help="with --tcp: the token clients must send is in FILE (yours, mode 0600); "
        "default: a new random token in a file the server names on stderr",
    )
    parser.add_argument(
        "--tcp-no-token",
        action="store_true",
        help="UNSAFE: with --tcp, serve the first connection without a token; any local "
        "process that connects first controls an agent running as you",
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
    argv, inner = _split_inner(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    not_dumpable()  # this process holds keys: its /proc/<pid>/environ is closed to others
    if args.wrap and not inner:
        _wrap_usage("--wrap needs the language server to run: --wrap -- CMD ARGS…")
    if inner and not args.wrap:
        _wrap_usage("a command after -- goes with --wrap")
    if args.print_settings_schema:
        from driveros_lsp._settings import settings_json_schema

        sys.stdout.write(json.dumps(settings_json_schema(), indent=2, sort_keys=True) + "\n")
        sys.stdout.flush()
        return
    if args.print_protocol_schema:
        from driveros_lsp.protocol_models import payload_json_schema

        sys.stdout.write(json.dumps(payload_json_schema(), indent=2, sort_keys=True) + "\n")
        sys.stdout.flush()
        return
    if args.tcp is not None:
        problem = remote_exposure(*args.tcp)
        if problem is not None and not args.allow_remote_unsafe:
            sys.stderr.write(
                f"driveros-lsp: error: refusing --tcp {args.tcp[0]}:{args.tcp[1]}: {problem}. "
                "A client can run commands as you and the token is sent in clear text, so "
                "--tcp listens on loopback only (127.0.0.1, ::1, localhost). Reach it "
                "from elsewhere through an SSH tunnel, or pass --allow-remote-unsafe "
                "(anyone who can connect then controls the agent).\n"
            )
            raise SystemExit(1)
        if problem is not None:
            sys.stderr.write(
                f"driveros-lsp: warning: --allow-remote-unsafe: {problem}; anyone who can "
                "connect controls an agent running as you\n"
            )
    token: str | None = None
    token_file: Path | None = None
    if args.tcp is not None:
        token, token_file = _tcp_token(args.tcp_token_file, no_token=args.tcp_no_token)
    elif args.tcp_token_file is not None or args.tcp_no_token:
        _usage_error("--tcp-token-file and --tcp-no-token go with --tcp")
    fds = None
    if args.tcp is None:
        from driveros.stdio import claim_stdio

        fds = claim_stdio()  # before anything else can write to stdout
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level,  # a level name logging knows
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from driveros_lsp._app import create_server
    from driveros_lsp._serve import run_process, serve_stdio
    from driveros_lsp._tcp import serve_tcp

    server = create_server(runner_factory=runner_factory)
    if fds is not None and args.wrap:
        from driveros_lsp.wrap import serve_wrapped

        asyncio.run(run_process(serve_wrapped(server, fds, inner)))
    elif fds is not None:
        asyncio.run(run_process(serve_stdio(server, fds)))
    else:
        host, port = args.tcp
        try:
            asyncio.run(run_process(serve_tcp(server, host, port, token=token)))
        finally:
            if token_file is not None:
                token_file.unlink(missing_ok=True)
    sys.exit(0 if server.protocol._shutdown else 1)


def _usage_error(message: str) -> NoReturn:
    sys.stderr.write(f"driveros-lsp: error: {message}\n")
    raise SystemExit(1)


def _tcp_token(given: Path | None, *, no_token: bool) -> tuple[str | None, Path | None]:
    """The token a --tcp client must send, and the file made for it (None: the user's own
    file, or no token); says on stderr where the token is."""
    from driveros_lsp._tcp import TokenFileError, new_token_file, read_token_file

    if no_token:
        if given is not None:
            _usage_error("--tcp-no-token and --tcp-token-file exclude each other")
        sys.stderr.write(
            "driveros-lsp: warning: --tcp-no-token: the first local process to connect "
            "controls an agent running as you\n"
        )
        return None, None
    try:
        if given is not None:
            return read_token_file(given), None
        from driveros.state import state_dir

        path, token = new_token_file(state_dir() / "tokens")
    except TokenFileError as exc:
        _usage_error(str(exc))
    except OSError as exc:
        _usage_error(f"cannot write the token file: {exc}")
    # stderr, whatever the log level, before the listening line: a launcher reads it
    sys.stderr.write(f"driveros-lsp token file: {path}\n")
    sys.stderr.flush()
    return token, path


def _version() -> str:
    from driveros import __version__

    return __version__


def _split_inner(argv: list[str]) -> tuple[list[str], list[str]]:
    """driveros-lsp's own arguments, and the wrapped server's command (after ``--``)."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1 :]


def _wrap_usage(message: str) -> NoReturn:
    sys.stderr.write(f"driveros-lsp: error: {message}\n")
    raise SystemExit(1)


if __name__ == "__main__":
    main()

"""``driveros trust``: which workspaces the user trusts (docs/security.md, "Workspace trust").

    driveros trust [PATH]            trust PATH (default: .) and every directory below it
    driveros trust --list            the trusted directories, one per line
    driveros trust --revoke [PATH]   stop trusting PATH (default: .)

The store is ``$XDG_CONFIG_HOME/driveros/trusted-workspaces.json`` (``~/.config/…``), keyed by
resolved real paths. stdout carries the data; exit 1 on a usage or store error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from driveros.trust import TrustStore


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", type=Path, help="the workspace (default: .)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--list", action="store_true", help="list the trusted directories")
    action.add_argument("--revoke", action="store_true", help="stop trusting PATH")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    store = TrustStore.default()
    if args.list:
        if args.path is not None:
            sys.stderr.write("driveros trust: error: --list takes no PATH\n")
            return 1
        entries = store.entries()
        if args.format == "json":
            _write(json.dumps([e.model_dump() for e in entries], indent=2) + "\n")
        else:
            _write("".join(f"{e.path}\n" for e in entries))
        return 0
    path = args.path if args.path is not None else Path()
    if args.revoke:
        removed = store.revoke(path)
        still = store.covering(path)
        if args.format == "json":
            payload = {
                "revoked": [e.path for e in removed],
                "still_trusted_by": still.path if still else None,
            }
            _write(json.dumps(payload) + "\n")
        else:
            _write("".join(f"revoked {e.path}\n" for e in removed))
        if not removed and still is None:
            sys.stderr.write(f"driveros trust: {path} was not trusted\n")
        if still is not None:
            sys.stderr.write(
                f"driveros trust: {path} is still trusted through {still.path} "
                f"(driveros trust --revoke {still.path})\n"
            )
        return 0
    entry = store.trust(path)
    if args.format == "json":
        _write(json.dumps(entry.model_dump()) + "\n")
    else:
        _write(f"trusted {entry.path}\n")
        sys.stderr.write(
            "driveros: its .env, .driveros.toml and [tool.driveros] are now configuration; "
            "custom checks still go through the approval policy\n"
        )
    return 0

"""``driveros memory``: inspect and manage long-term memory (stdout carries data only)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError

from driveros._errors import ConfigError, MemoryStoreError
from driveros._plural import count
from driveros.cli._input import read_input
from driveros.cli._parser import UsageError
from driveros.config import Environment, load_environment
from driveros.memory import (
    Fact,
    FactStatus,
    MemoryStats,
    MemoryStore,
    Placement,
    check_integrity,
    embedder_from_env,
    open_memory_store,
    place_store,
    salvage_facts,
)

ACTIONS = (
    "list",
    "search",
    "show",
    "forget",
    "undo",
    "export",
    "import",
    "stats",
    "reembed",
    "doctor",
)
#: Actions that print empty data, rather than fail, when nothing was ever remembered.
_EMPTY_OK = ("list", "search", "export", "stats")
EXPORT_VERSION = 1
_FACTS = TypeAdapter(list[Fact])


def _fact_id(text: str) -> int:
    try:
        value = int(text.removeprefix("#"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a fact id: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"not a fact id: {text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Options accepted before and after the action (after wins)."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--workspace",
        type=Path,
        default=default,
        help="the workspace whose memory to use (default: the current directory)",
    )
    parser.add_argument(
        "--path",
        type=Path,
        default=default,
        help="the database file, used as named (default: DRIVEROS_MEMORY_PATH, else this "
        "repository's file in the state directory)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default=argparse.SUPPRESS if suppress else "text",
        help="output format (default: text)",
    )


def configure(parser: argparse.ArgumentParser) -> None:
    _common(parser, suppress=False)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    specs = {
        "list": "list remembered facts, newest first",
        "search": "recall the facts most relevant to a query",
        "show": "show one fact with its provenance and history",
        "forget": "retire a fact (kept; `undo` restores it)",
        "undo": "restore a retired fact, or revert the latest change",
        "export": "write this repository's facts as JSON",
        "import": "add the active facts of an export",
        "stats": "counts, embedding model, file size",
        "reembed": "re-embed every fact and pin the store to a new embedding model",
        "doctor": "check the database (SQLite integrity_check); salvage what is readable",
    }
    ps = {name: sub.add_parser(name, help=text, description=text) for name, text in specs.items()}
    for p in ps.values():
        _common(p, suppress=True)
    ps["list"].add_argument(
        "--status",
        choices=(*get_args(FactStatus), "all"),
        default="active",
        help="which facts (default: active)",
    )
    ps["list"].add_argument("--limit", type=_positive, default=None, help="at most N facts")
    ps["list"].add_argument(
        "--all-scopes", action="store_true", help="every repository in this file"
    )
    ps["search"].add_argument("query", help="what to recall")
    ps["search"].add_argument("--limit", type=_positive, default=8, help="at most N (default 8)")
    ps["show"].add_argument("id", type=_fact_id, help="fact id (12 or #12)")
    ps["forget"].add_argument("id", type=_fact_id, help="fact id (12 or #12)")
    ps["forget"].add_argument("--why", default="forgotten by user", help="reason to record")
    ps["undo"].add_argument(
        "id", type=_fact_id, nargs="?", help="restore this fact (default: revert the last change)"
    )
    ps["export"].add_argument("--output", "-o", default="-", help="file to write (default: stdout)")
    ps["export"].add_argument(
        "--all-scopes", action="store_true", help="every repository in this file"
    )
    ps["import"].add_argument("file", help="an export file, or - for stdin")
    ps["doctor"].add_argument(
        "--salvage",
        metavar="FILE",
        default=None,
        help="write every readable fact of this repository as an export (- for stdout)",
    )
    ps["reembed"].add_argument(
        "--model", default=None, help="embedding model (default: MNEME_EMBED_MODEL)"
    )


def _line(fact: Fact) -> str:
    extra = f" -> #{fact.superseded_by}" if fact.superseded_by else ""
    return f"#{fact.id}\t{fact.status}{extra}\t{fact.updated_at[:10]}\t{fact.text}"


def _emit_facts(facts: list[Fact], fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(_FACTS.dump_json(facts, indent=2).decode() + "\n")
    else:
        for fact in facts:
            sys.stdout.write(_line(fact) + "\n")


def _emit_fact(fact: Fact, fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(fact.model_dump_json(indent=2) + "\n")
        return
    for key, value in fact.model_dump().items():
        if value not in (None, ""):
            sys.stdout.write(f"{key}: {value}\n")


async def _read_import(source: str) -> list[Fact]:
    raw = await asyncio.to_thread(read_input, source)
    try:
        data: Any = json.loads(raw)
        facts = data["facts"] if isinstance(data, dict) else data
        return _FACTS.validate_python(facts)
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        raise ConfigError(
            f"{source} is not a driveros memory export (expected {{'facts': [...]}})"
        ) from exc


async def run(args: argparse.Namespace) -> int:
    if args.action is None:
        raise UsageError(f"driveros memory: error: choose an action: {', '.join(ACTIONS)}")
    workspace = (args.workspace or Path.cwd()).resolve()
    env = await asyncio.to_thread(load_environment, cwd=workspace)
    # A file named with --path is the user's choice, shown to the user (never to a model):
    # used as named. DRIVEROS_MEMORY_PATH (configuration) gets the workspace checks.
    placement = await place_store(workspace, env, path=args.path, inspect=args.path is not None)
    for notice in placement.notices:
        sys.stderr.write(f"driveros memory: {notice}\n")
    path = placement.path
    if args.action == "doctor":
        return await _doctor(args, placement)
    # An import is read and checked before anything is created: a bad file leaves no database.
    imported = await _read_import(args.file) if args.action == "import" else []
    if not await asyncio.to_thread(path.exists):
        if args.action == "import" and not imported:
            _emit_imported(0, args.format)
            return 0
        if args.action in _EMPTY_OK:
            sys.stderr.write(f"driveros memory: nothing remembered yet ({path} does not exist)\n")
            await _emit_empty(args, placement)
            return 0
        if args.action != "import":
            raise ConfigError(f"no memory database at {path}")
    hybrid = args.action in ("search", "import")
    store = await open_memory_store(
        workspace, env, placement=placement, with_embedder=hybrid, timeout=None
    )
    try:
        if args.action == "import":
            _emit_imported(await store.import_facts(imported), args.format)
            return 0
        return await _dispatch(args, store, env)
    finally:
        await store.aclose()


def _emit_imported(added: int, fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(json.dumps({"imported": added}) + "\n")
    else:
        sys.stdout.write(f"imported {count(added, 'fact')}\n")


async def _export(args: argparse.Namespace, scope: str, facts: list[Fact]) -> None:
    """The export document (``{"version", "scope", "facts"}``), to ``-o`` or stdout."""
    payload = {
        "version": EXPORT_VERSION,
        "scope": scope,
        "facts": [f.model_dump() for f in facts],
    }
    text = json.dumps(payload, indent=2) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
        return
    try:
        await asyncio.to_thread(Path(args.output).write_text, text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
    sys.stderr.write(f"exported {count(len(facts), 'fact')} to {args.output}\n")


async def _emit_empty(args: argparse.Namespace, placement: Placement) -> None:
    """What an action shows when no database exists yet: empty data, in the asked format."""
    if args.action == "export":
        await _export(args, placement.scope, [])
    elif args.action == "stats":
        stats = MemoryStats(
            path=str(placement.path),
            scope=placement.scope,
            schema_version=0,
            active=0,
            superseded=0,
            forgotten=0,
            scopes=0,
        )
        _emit_stats(stats, args.format)
    elif args.format == "json":
        _emit_facts([], "json")


def _emit_stats(stats: MemoryStats, fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(stats.model_dump_json(indent=2) + "\n")
    else:
        for key, value in stats.model_dump().items():
            sys.stdout.write(f"{key}: {'-' if value is None else value}\n")


async def _dispatch(args: argparse.Namespace, store: MemoryStore, env: Environment) -> int:
    fmt = args.format
    match args.action:
        case "list":
            facts = await store.list_facts(
                status=args.status, limit=args.limit, all_scopes=args.all_scopes
            )
            if not facts:
                await _say_empty(store, args)
            _emit_facts(facts, fmt)
        case "search":
            _emit_facts(await store.search(args.query, args.limit), fmt)
        case "show":
            _emit_fact(await store.get(args.id), fmt)
        case "forget":
            fact = await store.forget(args.id, why=args.why)
            _emit_facts([fact], fmt)
            sys.stderr.write(f"forgot #{fact.id} (restore: driveros memory undo {fact.id})\n")
        case "undo":
            _emit_facts(await store.undo(args.id), fmt)
        case "export":
            facts = await store.list_facts(status="all", all_scopes=args.all_scopes)
            await _export(args, store.scope, list(reversed(facts)))
        case "stats":
            _emit_stats(await store.stats(), fmt)
        case "reembed":
            embedder = embedder_from_env(env, model=args.model)
            if embedder is None:
                raise ConfigError("no embedding model: pass --model or set MNEME_EMBED_MODEL")
            n = await store.reembed(embedder)
            if fmt == "json":
                sys.stdout.write(json.dumps({"reembedded": n, "model": embedder.model}) + "\n")
            else:
                sys.stdout.write(f"re-embedded {count(n, 'fact')} with {embedder.model}\n")
        case _:
            raise MemoryStoreError(f"unknown action {args.action!r}")
    return 0


async def _say_empty(store: MemoryStore, args: argparse.Namespace) -> None:
    """Why ``list`` printed nothing: no fact at all yet, or none with the asked status."""
    every = await store.list_facts(status="all", limit=1, all_scopes=args.all_scopes)
    if not every:
        sys.stderr.write(f"driveros memory: nothing remembered yet ({store.path} has no facts)\n")
    else:
        sys.stderr.write(
            f"driveros memory: no {args.status} facts (--status all lists every one)\n"
        )


async def _doctor(args: argparse.Namespace, placement: Placement) -> int:
    """Exit 0 when the database is sound (or absent), 1 when it is damaged."""
    path = placement.path
    if not await asyncio.to_thread(path.exists):
        sys.stderr.write(f"driveros memory: no memory database at {path}: nothing to check\n")
        if args.format == "json":
            sys.stdout.write(json.dumps({"path": str(path), "ok": True, "problems": []}) + "\n")
        return 0
    problems = await check_integrity(path, full=True)
    report: dict[str, Any] = {"path": str(path), "ok": not problems, "problems": problems[:50]}
    if args.salvage is not None:
        scope = placement.scope
        found = await salvage_facts(path, scope=scope)
        payload = {
            "version": EXPORT_VERSION,
            "scope": scope,
            "facts": [f.model_dump() for f in found.facts],
        }
        text = json.dumps(payload, indent=2) + "\n"
        if args.salvage == "-":
            sys.stdout.write(text)
        else:
            await asyncio.to_thread(Path(args.salvage).write_text, text, encoding="utf-8")
        report["salvaged"] = len(found.facts)
        report["salvage_complete"] = found.complete and not found.gaps
        gaps = "" if report["salvage_complete"] else " (some rows could not be read)"
        sys.stderr.write(f"salvaged {len(found.facts)} facts to {args.salvage}{gaps}\n")
    if args.salvage != "-":
        if args.format == "json":
            sys.stdout.write(json.dumps(report, indent=2) + "\n")
        else:
            sys.stdout.write(f"path: {path}\nintegrity: {'ok' if not problems else 'damaged'}\n")
            for problem in report["problems"]:
                sys.stdout.write(f"problem: {problem}\n")
    if problems:
        salvage = args.salvage if args.salvage not in (None, "-") else "facts.json"
        sys.stderr.write(
            f"driveros memory: {path} is damaged; nothing will be written to it. To recover:\n"
            f"  driveros memory doctor --salvage {salvage}   # the facts still readable\n"
            f"  mv {path} {path}.damaged   # and its -wal/-shm files, if any\n"
            f"  driveros memory import {salvage}   # a fresh database with them\n"
        )
        return 1
    return 0

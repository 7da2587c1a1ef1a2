"""``driveros corpus add|verdict|stats|list``: the dogfood corpus of human verdicts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import get_args

from pydantic import BaseModel

from driveros._unicode import json_terminal_safe, terminal_safe
from driveros.cli._input import read_input
from driveros.cli._parser import ArgumentParser, UsageError


def _choices(model: type[BaseModel], field: str) -> tuple[str, ...]:
    """The values of a field's ``Literal`` (declared once, in driveros.evals)."""
    return get_args(model.model_fields[field].annotation)


def configure(parser: ArgumentParser) -> None:
    from driveros.evals import CorpusRecord, Verdict

    parser.add_argument("--corpus", type=Path, help="corpus file (default .driveros/corpus.jsonl)")
    sub = parser.add_subparsers(
        dest="corpus_command", metavar="ACTION", parser_class=ArgumentParser
    )
    add = sub.add_parser("add", help="add a record (prints its id)")
    add.add_argument("--kind", required=True, choices=_choices(CorpusRecord, "kind"))
    add.add_argument("--input", required=True, help="the input text, or @FILE, or - for stdin")
    add.add_argument("--output", required=True, help="the output text, or @FILE")
    add.add_argument("--model", default="")
    add.add_argument("--provider", default="")
    verdict = sub.add_parser("verdict", help="record the human verdict on a record")
    verdict.add_argument("id")
    verdict.add_argument("label", choices=_choices(Verdict, "label"))
    verdict.add_argument("--edit", help="the edited text (or @FILE); needed for 'edited'")
    verdict.add_argument("--note", default="")
    verdict.add_argument("--by", default="human")
    stats = sub.add_parser("stats", help="counts by kind and verdict")
    stats.add_argument("--format", choices=("text", "json"), default="text")
    lst = sub.add_parser("list", help="one line per record")
    lst.add_argument("--pending", action="store_true", help="only records without a verdict")
    lst.add_argument("--format", choices=("text", "json"), default="text")
    for p in (add, verdict, stats, lst):  # before or after the action
        p.add_argument("--corpus", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def _text(value: str) -> str:
    if value == "-":
        return read_input("-")
    if value.startswith("@"):
        return read_input(value[1:])
    return value


async def run(args: argparse.Namespace) -> int:
    from driveros.cli._common import open_corpus
    from driveros.config import load_environment
    from driveros.evals import CorpusRecord, Verdict

    corpus = await open_corpus(load_environment(), args.corpus)
    if args.corpus_command == "add":
        record = await corpus.add(
            CorpusRecord(
                kind=args.kind,
                input=_text(args.input),
                output=_text(args.output),
                model=args.model,
                provider=args.provider,
            )
        )
        sys.stdout.write(record.id + "\n")
        return 0
    if args.corpus_command == "verdict":
        edit = _text(args.edit) if args.edit else None
        updated = await corpus.set_verdict(
            args.id, Verdict(label=args.label, edit=edit, note=args.note, by=args.by)
        )
        sys.stdout.write(terminal_safe(f"{updated.id} {args.label}\n"))  # ids come from the file
        return 0
    if args.corpus_command == "stats":
        stats = await corpus.stats()
        if args.format == "json":
            sys.stdout.write(stats.model_dump_json() + "\n")
            return 0
        rate = "n/a" if stats.acceptance_rate is None else f"{stats.acceptance_rate:.0%}"
        sys.stdout.write(f"records   {stats.total} ({stats.pending} without a verdict)\n")
        for kind, count in stats.by_kind.items():
            sys.stdout.write(f"  {kind:<12}{count}\n")
        for label, count in stats.by_verdict.items():
            sys.stdout.write(f"{label:<10}{count}\n")
        sys.stdout.write(f"accepted  {rate} of judged\n")
        return 0
    if args.corpus_command == "list":
        records = await corpus.records()
        if args.pending:
            records = [r for r in records if r.verdict is None]
        for r in records:
            if args.format == "json":
                sys.stdout.write(json_terminal_safe(r.model_dump_json()) + "\n")
            else:
                label = r.verdict.label if r.verdict else "pending"
                first = r.output.strip().splitlines()[0] if r.output.strip() else ""
                sys.stdout.write(terminal_safe(f"{r.id}  {r.kind:<10} {label:<9} {first[:70]}\n"))
        return 0
    raise UsageError("driveros corpus: error: choose an action: add, verdict, stats, list")

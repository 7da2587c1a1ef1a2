"""``driveros council review|consult``: several models review an artifact or answer a question."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from driveros._errors import ConfigError, DriverosError, ProviderError
from driveros._unicode import json_terminal_safe, terminal_safe
from driveros.cli._fail import fail
from driveros.cli._input import read_input, stdin_usable
from driveros.cli._options import (
    PROVIDER_HELP,
    PROVIDER_METAVAR,
    ProviderSpec,
    positive_int,
    provider_spec,
)
from driveros.cli._parser import ArgumentParser, UsageError
from driveros.config import Environment
from driveros.llm import Provider


def _record_options(parser: ArgumentParser, *, default: bool) -> None:
    """Accepted before and after the action (``council --no-record review`` = ``council review
    --no-record``)."""
    parser.add_argument(
        "--corpus",
        type=Path,
        default=None if default else argparse.SUPPRESS,
        help="corpus file (default .driveros/corpus.jsonl)",
    )
    parser.add_argument(
        "--no-record",
        action="store_true",
        default=False if default else argparse.SUPPRESS,
        help="do not record to the corpus",
    )


def configure(parser: ArgumentParser) -> None:
    _record_options(parser, default=True)
    sub = parser.add_subparsers(
        dest="council_command", metavar="ACTION", parser_class=ArgumentParser
    )
    rev = sub.add_parser("review", help="critic, author response and referee verdict")
    rev.add_argument("artifact", nargs="?", default="-", help="a file, or - for stdin")
    rev.add_argument("--staged", action="store_true", help="review `git diff --cached`")
    rev.add_argument("--kind", default="diff", help="diff, plan, answer, ... (default diff)")
    _providers(rev, "the council's seats")
    spec = PROVIDER_METAVAR
    rev.add_argument("--author", type=provider_spec, metavar=spec, help="the author's seat")
    rev.add_argument("--critic", type=provider_spec, metavar=spec, help="the critic's seat")
    rev.add_argument(
        "--referee", type=provider_spec, metavar=spec, action="append", default=[], help="a referee"
    )
    rev.add_argument("--rounds", type=positive_int, default=2, metavar="N")
    rev.add_argument("--check", action="store_true", help="exit 2 unless the verdict is approve")
    rev.add_argument("--format", choices=("text", "json"), default="text")
    con = sub.add_parser("consult", help="several models answer; the referee synthesizes")
    con.add_argument("question", help="the question, or - for stdin")
    _providers(con, "the members", extra=("--member",))
    con.add_argument(
        "--referee", type=provider_spec, metavar=spec, action="append", default=[], help="a referee"
    )
    con.add_argument("--format", choices=("text", "json"), default="text")
    for p in (rev, con):
        _record_options(p, default=False)


def _providers(parser: ArgumentParser, who: str, extra: tuple[str, ...] = ()) -> None:
    parser.add_argument(
        "--provider",
        *extra,
        dest="providers",
        type=provider_spec,
        action="append",
        default=[],
        metavar=PROVIDER_METAVAR,
        help=f"{who}: {PROVIDER_HELP} (repeat; default: every configured provider)",
    )


async def _read(source: str) -> str:
    if source == "-" and stdin_usable() and sys.stdin.isatty():
        raise ConfigError("nothing to read: pass a file, pipe the artifact in, or --staged")
    return await asyncio.to_thread(read_input, source)


async def _record(
    args: argparse.Namespace,
    env: Environment,
    *,
    text: str,
    output: str,
    referee: str,
    meta: dict[str, str],
) -> None:
    if args.no_record:
        return
    from driveros.cli._common import open_corpus
    from driveros.evals import CorpusRecord

    record = CorpusRecord(
        kind="council",
        input=text,
        output=output,
        model=referee,
        provider=referee.split(":", 1)[0],
        meta=meta,
    )
    try:
        await (await open_corpus(env, args.corpus)).add(record)
    except DriverosError as exc:  # e.g. a planted link: the verdict printed still stands
        sys.stderr.write(terminal_safe(f"driveros council: not recorded: {exc}") + "\n")


async def _configured(env: Environment, specs: list[ProviderSpec]) -> list[Provider]:
    """The ``--provider`` ones, else every configured provider; none is a setup error."""
    from driveros.cli._common import provider_from_spec
    from driveros.llm import Registry

    if specs:
        return [provider_from_spec(spec, env) for spec in specs]
    registry = await Registry.from_env(env)
    providers = [registry.must_get(n) for n in registry.names()]
    if not providers:
        raise ConfigError(
            "no provider is configured for the council: set a provider key (docs/cli.md)"
        )
    return providers


async def _review(args: argparse.Namespace, env: Environment, opened: list[Provider]) -> int:
    from driveros.cli._common import provider_from_spec
    from driveros.council import review, seat_council

    if args.staged:
        from driveros.dogfood import staged_diff

        artifact = await staged_diff(Path.cwd())
    else:
        artifact = await _read(args.artifact)
    if not artifact.strip():
        raise ConfigError("the artifact to review is empty")
    author: Provider | None
    if args.critic or args.author or args.referee:
        critic = provider_from_spec(args.critic, env)
        author = provider_from_spec(args.author, env) if args.author else None
        referees = [provider_from_spec(s, env) for s in args.referee] or [critic]
        opened += [critic, *referees, *([author] if author else [])]
    else:
        opened += await _configured(env, args.providers)
        author, critic, referees = seat_council(opened)
    verdict = await review(
        artifact,
        critic=critic,
        referees=referees,
        author=author,
        kind=args.kind,
        max_rounds=args.rounds,
    )
    if args.format == "json":
        sys.stdout.write(json_terminal_safe(verdict.model_dump_json()) + "\n")
    else:
        out = f"verdict: {verdict.verdict} (referee {verdict.referee})\n{verdict.summary}\n"
        for issue in verdict.issues:
            out += f"- [{issue.severity}] {issue.description}\n"
            if issue.evidence:
                out += f"    evidence: {issue.evidence}\n"
        sys.stdout.write(terminal_safe(out))
    for note in verdict.fallbacks:
        sys.stderr.write(terminal_safe(f"referee fallback: {note}") + "\n")
    await _record(
        args,
        env,
        text=artifact,
        output=verdict.model_dump_json(),
        referee=verdict.referee,
        meta={"mode": "review", "verdict": verdict.verdict},
    )
    return 2 if args.check and verdict.verdict != "approve" else 0


async def _consult(args: argparse.Namespace, env: Environment, opened: list[Provider]) -> int:
    from driveros.cli._common import provider_from_spec
    from driveros.council import consult

    question = await _read(args.question) if args.question == "-" else args.question
    members = await _configured(env, args.providers)
    opened += members
    referees = [provider_from_spec(s, env) for s in args.referee] or [*members]
    opened += referees
    result = await consult(question, members=members, referees=referees)
    if args.format == "json":
        sys.stdout.write(json_terminal_safe(result.model_dump_json()) + "\n")
    else:
        out = result.synthesis.strip() + "\n"
        for title, items in (
            ("Agreements", result.agreements),
            ("Disagreements", result.disagreements),
        ):
            if items:
                out += f"\n{title}:\n" + "".join(f"- {item}\n" for item in items)
        sys.stdout.write(terminal_safe(out))
    for answer in result.answers:
        if answer.error:
            sys.stderr.write(terminal_safe(f"{answer.member} failed: {answer.error}") + "\n")
    await _record(
        args,
        env,
        text=question,
        output=result.model_dump_json(),
        referee=result.referee,
        meta={"mode": "consult"},
    )
    return 0


async def run(args: argparse.Namespace) -> int:
    from driveros.config import load_environment
    from driveros.council import CouncilError

    actions = {"review": _review, "consult": _consult}
    action = actions.get(args.council_command)
    if action is None:
        raise UsageError("driveros council: error: choose an action: review, consult")
    opened: list[Provider] = []
    try:
        return await action(args, load_environment(), opened)
    except (CouncilError, ProviderError) as exc:
        return fail(f"driveros council: {exc}", args.format, outcome="provider_error", exit_code=5)
    finally:
        closed: set[int] = set()
        for provider in opened:
            if id(provider) not in closed:
                closed.add(id(provider))
                await provider.aclose()

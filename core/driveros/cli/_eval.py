"""``driveros eval``: run suites (live, record, replay), report and compare results."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from driveros._errors import ConfigError
from driveros.cli._options import (
    add_provider,
    add_run_options,
    chosen_provider,
    non_negative_int,
    positive_dollars,
    positive_int,
)
from driveros.cli._parser import ArgumentParser, UsageError
from driveros.config import Environment

if TYPE_CHECKING:
    from driveros.config import Environment
    from driveros.evals import Executor


def configure(parser: ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="eval_command", metavar="ACTION", parser_class=ArgumentParser)
    run = sub.add_parser("run", help="run a suite (a shipped name or a suite.yaml path)")
    run.add_argument("suite")
    mode = run.add_mutually_exclusive_group()
    mode.add_argument("--replay", action="store_true", help="serve recorded cassettes (offline)")
    mode.add_argument("--record", action="store_true", help="run live and record cassettes")
    run.add_argument(
        "--scripted",
        action="store_true",
        help="with --record: play each case's scripted turns instead of a real provider",
    )
    add_provider(run, help="provider for live/record runs and the corpus judge (NAME[:MODEL])")
    run.add_argument(
        "--concurrency", type=positive_int, default=2, metavar="N", help="cases at once"
    )
    run.add_argument(
        "--retries",
        type=non_negative_int,
        default=2,
        metavar="N",
        help="retries of infrastructure failures (default 2)",
    )
    run.add_argument("--case", action="append", default=[], help="run only this case (repeat)")
    run.add_argument("--out", type=Path, help="output directory (default .driveros/evals/...)")
    run.add_argument("--no-resume", action="store_true", help="ignore earlier partial results")
    run.add_argument("--strict-replay", action="store_true", help="fail on request mismatches")
    run.add_argument("--corpus", type=Path, help="corpus file for corpus suites")
    run.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where cases run: this machine (default) or a Ray cluster (pip install driveros[ray])",
    )
    run.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="with --executor ray: 'auto' (the running cluster) or ADDR; default: a local cluster",
    )
    add_run_options(run, "sandbox", "runtime")  # every case's tier, where the case runs
    run.add_argument(
        "--max-cost",
        type=positive_dollars,
        metavar="USD",
        help="US dollars the suite may spend; cases left when it is spent end resource_cap",
    )
    run.add_argument("--format", choices=("text", "json"), default="text")
    sub.add_parser("list", help="list the shipped suites")
    rep = sub.add_parser("report", help="write the HTML report of result files")
    rep.add_argument("results", nargs="+", type=Path)
    rep.add_argument("--out", type=Path, default=Path("report.html"))
    cmp = sub.add_parser("compare", help="compare two result files")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    cmp.add_argument("--check", action="store_true", help="exit 2 when a case regressed")
    cmp.add_argument(
        "--allow-different-suites",
        action="store_true",
        help="compare the results of two different suites case by case (refused otherwise)",
    )
    cmp.add_argument("--format", choices=("text", "json"), default="text")


def _load_run(path: Path) -> object:
    from driveros.evals import EvalRun

    try:
        return EvalRun.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read results {path}: {exc}") from exc


class _Progress:
    """A progress bar on stderr (one line per case when stderr is not a terminal)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.passed = 0
        self.failed = 0

    async def __call__(self, result: object, done: int, total: int) -> None:
        from driveros.evals import CaseResult

        assert isinstance(result, CaseResult)
        if result.passed:
            self.passed += 1
        else:
            self.failed += 1
        width = 24
        filled = int(width * done / max(total, 1))
        bar = "#" * filled + "." * (width - filled)
        status = "pass" if result.passed else ("infra" if result.infra_error else "FAIL")
        line = (
            f"[{bar}] {done}/{total}  {self.passed} passed, {self.failed} failed  "
            f"{result.case_id}: {status}"
        )
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + line + ("\n" if done == total else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _make_out_dir(out: Path, files: list[str]) -> None:
    """The results directory, made without following a link below the working directory (a
    committed ``.driveros -> ~`` must not receive the results), and none of the ``files`` the
    run writes there a planted link: PlantedLinkError before any case runs."""
    from pathlib import PurePosixPath

    from driveros._safe_open import anchor, open_dir, refuse_unless_regular

    base, rel = anchor(out, Path.cwd())
    base.mkdir(parents=True, exist_ok=True)
    with open_dir(base, rel, create=True):
        pass
    for name in files:
        path = PurePosixPath(name)
        with open_dir(out, path.parent, create=True) as fd:
            refuse_unless_regular(fd, path.name, root=out, shown=name)


async def _run(args: argparse.Namespace) -> int:
    from driveros.config import load_environment
    from driveros.evals import EvalOptions, load_suite, render_html, run_suite
    from driveros.state import startup_gc

    await startup_gc()  # what killed driveros processes left, as every entry point does
    suite = load_suite(args.suite)
    if args.scripted and not args.record:
        raise ConfigError("--scripted goes with --record")
    if suite.kind == "corpus":
        return await _run_corpus(suite.corpus, args)
    mode = "replay" if args.replay else "record" if args.record else "live"
    provider, model = chosen_provider(args)
    env = load_environment()
    if mode == "live" or (mode == "record" and not args.scripted):
        await _check_provider(env, provider, model)
    out = (
        args.out
        or Path(".driveros/evals") / f"{suite.name}-{mode}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    written = [
        "results.json",
        "results.partial.jsonl",
        *(f"events/{c.id}.jsonl" for c in suite.cases),
    ]
    await asyncio.to_thread(_make_out_dir, out, written)
    options = EvalOptions(
        mode=mode,
        provider=provider,
        model=model,
        retries=args.retries,
        strict_replay=args.strict_replay,
        output_dir=out.resolve(),
        resume=not args.no_resume,
        only=tuple(args.case),
        scripted=args.scripted,
        sandbox=args.sandbox,
        runtime=args.runtime,
        max_cost_usd=args.max_cost,
    )
    # stdout carries the results only: Ray's driver prints cluster notices (a worker died,
    # a task was lost) on whatever sys.stdout is while it runs; they belong with the trace.
    with contextlib.redirect_stdout(sys.stderr):
        run = await run_suite(
            suite, options, env=env, executor=_executor(args, env), on_case_done=_Progress()
        )
    report = out / "report.html"
    report.write_text(render_html([run], title=f"driveros eval: {suite.name}"), encoding="utf-8")
    s = run.summary
    if args.format == "json":
        sys.stdout.write(run.model_dump_json() + "\n")
    else:
        cost = "unknown" if s.cost_usd is None else f"${s.cost_usd:.4f}"
        for case in run.cases:
            mark = "PASS" if case.passed else ("INFRA" if case.infra_error else "FAIL")
            sys.stdout.write(f"{mark:5} {suite.name}/{case.case_id}  {case.outcome}\n")
        sys.stdout.write(
            f"{s.passed} passed, {s.failed} failed  (pass rate {s.pass_rate:.0%}, "
            f"95% CI {s.ci_low:.0%}-{s.ci_high:.0%}, {s.tokens} tokens, cost {cost})\n"
        )
    sys.stderr.write(f"results: {out / 'results.json'}\nreport: {report}\n")
    if s.infra_errors:
        return 5
    return 0 if s.failed == 0 else 2


async def _check_provider(env: Environment, provider: str | None, model: str | None) -> None:
    """A live run without a usable provider is a setup error (exit 1) before any case runs,
    not one infrastructure failure per case."""
    from driveros.llm import provider_from_env
    from driveros.runs import pick_provider

    await provider_from_env(pick_provider(env, provider), env, model=model).aclose()


def _executor(args: argparse.Namespace, env: Environment) -> Executor:
    from driveros.evals import LocalExecutor

    if args.executor == "local":
        if args.ray_address:
            raise ConfigError("--ray-address goes with --executor ray")
        return LocalExecutor(args.concurrency)
    from driveros.evals import RayExecutor, provider_env_vars

    return RayExecutor(
        address=args.ray_address,
        concurrency=args.concurrency,
        env_vars=provider_env_vars(env),
    )


async def _run_corpus(corpus_path: str | None, args: argparse.Namespace) -> int:
    from driveros.config import load_environment
    from driveros.evals import Corpus, judge_corpus, render_confusion
    from driveros.llm import provider_from_env
    from driveros.runs import pick_provider

    if args.replay or args.record:
        raise ConfigError("the corpus suite runs live against a judge model (no cassettes)")
    path = args.corpus or Path(corpus_path or ".driveros/corpus.jsonl")
    env = load_environment()
    name, model = chosen_provider(args)
    judge = provider_from_env(pick_provider(env, name), env, model=model)
    try:
        agreement = await judge_corpus(await Corpus(path).records(), judge)
    finally:
        await judge.aclose()
    if args.format == "json":
        sys.stdout.write(agreement.model_dump_json() + "\n")
    else:
        sys.stdout.write(render_confusion(agreement) + "\n")
    return 0


def run(args: argparse.Namespace) -> int:
    import asyncio

    if args.eval_command == "list":
        from driveros.evals import shipped_suite_names

        for name in shipped_suite_names():
            sys.stdout.write(name + "\n")
        return 0
    if args.eval_command == "run":
        return asyncio.run(_run(args))
    if args.eval_command == "report":
        from driveros.evals import EvalRun, render_html

        runs = [_load_run(p) for p in args.results]
        html = render_html([r for r in runs if isinstance(r, EvalRun)])
        args.out.write_text(html, encoding="utf-8")
        sys.stderr.write(f"report: {args.out}\n")
        return 0
    if args.eval_command == "compare":
        from driveros.evals import EvalRun, compare_runs, render_comparison_text

        before, after = _load_run(args.before), _load_run(args.after)
        assert isinstance(before, EvalRun) and isinstance(after, EvalRun)
        result = compare_runs(before, after, allow_different=args.allow_different_suites)
        if args.format == "json":
            sys.stdout.write(result.model_dump_json() + "\n")
        else:
            sys.stdout.write(render_comparison_text(result) + "\n")
        return 2 if args.check and result.regressions else 0
    raise UsageError("driveros eval: error: choose an action: run, list, report, compare")

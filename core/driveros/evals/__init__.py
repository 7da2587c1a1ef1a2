"""The eval harness, the dogfood corpus and its judge-agreement regression scorer."""

from driveros.evals._cassette import Cassette, CassetteError, Interaction
from driveros.evals._corpus import (
    Corpus,
    CorpusError,
    CorpusRecord,
    CorpusStats,
    Verdict,
    corpus_stats,
)
from driveros.evals._judge import Agreement, JudgedRecord, judge_corpus, render_confusion
from driveros.evals._ray import RAY_EXTRA, RayExecutor, provider_env_vars
from driveros.evals._report import (
    Comparison,
    DifferentSuitesError,
    compare_runs,
    render_comparison_text,
    render_html,
)
from driveros.evals._results import CaseResult, EvalRun, RunSummary, ScoreResult, summarize
from driveros.evals._runner import (
    CaseRunner,
    EvalOptions,
    Executor,
    LocalExecutor,
    SandboxFactory,
    docker_sandbox,
    local_sandbox,
    run_suite,
)
from driveros.evals._suite import Case, Suite, load_suite, shipped_suite_names

__all__ = [
    "RAY_EXTRA",
    "Agreement",
    "Case",
    "CaseResult",
    "CaseRunner",
    "Cassette",
    "CassetteError",
    "Comparison",
    "Corpus",
    "CorpusError",
    "CorpusRecord",
    "CorpusStats",
    "DifferentSuitesError",
    "EvalOptions",
    "EvalRun",
    "Executor",
    "Interaction",
    "JudgedRecord",
    "LocalExecutor",
    "RayExecutor",
    "RunSummary",
    "SandboxFactory",
    "ScoreResult",
    "Suite",
    "Verdict",
    "compare_runs",
    "corpus_stats",
    "docker_sandbox",
    "judge_corpus",
    "load_suite",
    "local_sandbox",
    "provider_env_vars",
    "render_comparison_text",
    "render_confusion",
    "render_html",
    "run_suite",
    "shipped_suite_names",
    "summarize",
]

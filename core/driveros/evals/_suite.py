"""Eval suites as data: a YAML file of cases, each a workspace fixture, a task and scorers.

    name: smoke
    defaults: {max_iterations: 8}
    cases:
      - id: module-path
        workspace: workspaces/go-module        # a directory beside the suite file
        task: What module path does this project declare?
        scorers:
          - {type: answer, regex: 'example\\.com/demo'}
          - {type: command, run: 'python3 -m pytest -q'}
          - {type: diagnostics_gone}
          - {type: judge, criteria: 'names the module path'}
          - {type: verdict}

A workspace may also be ``{git: <path or URL>, commit: <sha>}``. Paths are relative to the
suite file. Shipped suites live in ``driveros/evals/suites/<name>/suite.yaml``.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from driveros._errors import ConfigError
from driveros.diagnostics import DiagnosticItem


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AnswerScorer(_Strict):
    """The final answer must match: exactly, by regex (search), or contain a substring."""

    type: Literal["answer"] = "answer"
    exact: str | None = None
    regex: str | None = None
    contains: str | None = None

    @field_validator("regex")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"invalid regex {value!r}: {exc}") from exc
        return value


class CommandScorer(_Strict):
    """A command that must exit 0 in the case's sandbox after the agent finished."""

    type: Literal["command"] = "command"
    run: str
    timeout: float = 120.0


class DiagnosticsGoneScorer(_Strict):
    """The diagnostics the case targets are gone (``Result.targets_fixed``), or none remain."""

    type: Literal["diagnostics_gone"] = "diagnostics_gone"


class JudgeScorer(_Strict):
    """A judge model decides whether the answer meets ``criteria``."""

    type: Literal["judge"] = "judge"
    criteria: str


class VerdictScorer(_Strict):
    """The human verdict recorded for this case must be ``expect`` (default accepted)."""

    type: Literal["verdict"] = "verdict"
    expect: Literal["accepted", "edited", "rejected"] = "accepted"


class OutcomeScorer(_Strict):
    """The run must end with this outcome (e.g. ``stuck`` for a case built to stall)."""

    type: Literal["outcome"] = "outcome"
    expect: str = "answered"


Scorer = Annotated[
    AnswerScorer
    | CommandScorer
    | DiagnosticsGoneScorer
    | JudgeScorer
    | VerdictScorer
    | OutcomeScorer,
    Field(discriminator="type"),
]


class GitWorkspace(_Strict):
    git: str
    commit: str | None = None


class Case(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    task: str
    workspace: str | GitWorkspace
    scorers: tuple[Scorer, ...] = ()
    max_iterations: int | None = None
    max_wall_s: float | None = None
    #: The human verdict on this case's expected behaviour, for the verdict scorer.
    verdict: Literal["accepted", "edited", "rejected"] | None = None
    #: Diagnostics the task must make disappear (checked in the sandbox at the end). Setting
    #: them, or ``diagnostics: true``, attaches the build-diagnostics feed to the run.
    targets: tuple[DiagnosticItem, ...] = ()
    diagnostics: bool = False
    #: Scripted model turns used only when (re)recording the suite's cassettes offline.
    scripted: list[dict[str, Any]] | None = None
    tags: tuple[str, ...] = ()


class SuiteDefaults(_Strict):
    max_iterations: int = 12
    max_wall_s: float = 300.0
    #: Cases run in a disposable copy, so by default every action is allowed.
    approve: Literal["allow-all", "policy", "never"] = "allow-all"


class Suite(_Strict):
    name: str
    description: str = ""
    #: "agent": cases run the agent; "corpus": the judge-agreement suite over a corpus file.
    kind: Literal["agent", "corpus"] = "agent"
    #: Corpus suites: the corpus file (relative to the working directory).
    corpus: str | None = None
    defaults: SuiteDefaults = Field(default_factory=SuiteDefaults)
    cases: tuple[Case, ...]
    #: The directory of the suite file: workspaces and cassettes are relative to it.
    root: Path = Path()

    def case(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise ConfigError(f"suite {self.name!r} has no case {case_id!r}", suite=self.name)

    def workspace_dir(self, case: Case) -> Path | None:
        if isinstance(case.workspace, str):
            return (self.root / case.workspace).resolve()
        return None

    def cassette_path(self, case: Case) -> Path:
        return self.root / "cassettes" / f"{case.id}.json"


def shipped_suites_dir() -> Path:
    return Path(str(resources.files("driveros.evals") / "suites"))


def shipped_suite_names() -> list[str]:
    root = shipped_suites_dir()
    return sorted(p.parent.name for p in root.glob("*/suite.yaml"))


def load_suite(name_or_path: str) -> Suite:
    """Load a shipped suite by name, or a suite file (or its directory) by path."""
    candidate = Path(name_or_path)
    if candidate.is_dir():
        candidate = candidate / "suite.yaml"
    if not candidate.is_file():
        shipped = shipped_suites_dir() / name_or_path / "suite.yaml"
        if not shipped.is_file():
            names = ", ".join(shipped_suite_names()) or "none"
            raise ConfigError(
                f"no suite {name_or_path!r}: not a file, and not a shipped suite ({names})"
            )
        candidate = shipped
    import yaml  # lazy: only eval commands need it

    try:
        data = yaml.safe_load(candidate.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read suite {candidate}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"suite {candidate} must be a mapping with 'name' and 'cases'")
    try:
        suite = Suite.model_validate({**data, "root": candidate.parent.resolve()})
    except ValidationError as exc:
        raise ConfigError(f"invalid suite {candidate}:\n{exc}") from exc
    ids = [c.id for c in suite.cases]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ConfigError(f"suite {suite.name!r} repeats case ids: {', '.join(dupes)}")
    return suite

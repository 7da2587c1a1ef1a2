"""The workspace's diagnostics configuration: ``[tool.driveros.diagnostics]`` in pyproject.toml
or ``[diagnostics]`` in ``.driveros.toml`` (which wins when both exist).

Every field is optional; an empty configuration means "detect the toolchains and run their
usual checks". The schema is documented in docs/intel.md.

The configuration names commands, so it is configuration only in a workspace the user trusts,
and it is read once, from the user's own workspace when a run starts
(:func:`read_workspace_config`), never from a copy the agent can write to (docs/security.md,
"Attacks and how each is prevented", its first two).
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from driveros._errors import ConfigError

ParserName = Literal[
    "ruff",
    "mypy",
    "pyright",
    "compileall",
    "pytest",
    "tsc",
    "eslint",
    "go",
    "cargo",
    "gnu",
    "raw",
    "unittest",
    "flake8",
    "reformat",
    "stubtest",
    "gotest",
    "tap",
    "jest",
]

#: What a check is for: the project's tests, a linter, a type checker, a formatter's check,
#: or a compiler/build step.
CheckKind = Literal["test", "lint", "types", "format", "build"]

#: Files that hold diagnostics configuration; a change to one re-reads the configuration.
CONFIG_FILES = ("pyproject.toml", ".driveros.toml")


class IntelConfigError(ConfigError):
    """The workspace's diagnostics configuration is invalid (``context['origin']`` says where)."""


class CheckSpec(BaseModel):
    """One check: a shell command run in the sandbox and the parser for its output."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    command: str = Field(min_length=1)
    parser: ParserName = "gnu"
    #: Seconds; ``None`` uses the configuration's default timeout.
    timeout: float | None = Field(default=None, gt=0)
    #: Globs of the files whose content the result depends on (empty: every scanned file).
    #: A pattern without "/" matches a file name at any depth; "**" spans directories.
    triggers: tuple[str, ...] = ()
    #: Directory the command runs in, workspace-relative.
    cwd: str = "."
    #: Optional command to check only some files: ``{files}`` becomes the quoted paths
    #: (relative to ``cwd``). Used after an edit that touched only files matching ``per_file``.
    files_command: str | None = None
    per_file: tuple[str, ...] = ()
    #: Run instead when the primary command is rejected as unknown usage (old tool versions).
    fallback_command: str | None = None
    #: A test check's cheaper form (pytest's collection), run when the whole suite exceeds
    #: its time budget (``timeout``).
    budget_command: str | None = None
    #: Skip the check when every changed file is a Python module that no test file
    #: (test_*.py, *_test.py, conftest.py) imports, directly or not (pytest's view).
    pytest_closure: bool = False
    #: The ``source`` recorded on each diagnostic; defaults to ``name``.
    source: str | None = None
    #: What the check is for (``test`` checks follow the ``tests`` setting and its budget).
    kind: CheckKind | None = None
    #: Where the project declares or configures it ("Makefile:test", "setup.cfg [flake8]",
    #: "convention" for a toolchain's own default), for ``driveros doctor`` and the events.
    origin: str | None = None

    @field_validator("files_command")
    @classmethod
    def _files_placeholder(cls, value: str | None) -> str | None:
        if value is not None and "{files}" not in value:
            raise ValueError("files_command must contain the {files} placeholder")
        return value

    @property
    def label(self) -> str:
        return self.source or self.name


class IntelConfig(BaseModel):
    """The diagnostics feed's configuration (every field has a default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Also run the checks detected from the workspace's files (false: only ``checks``).
    auto: bool = True
    #: Default per-check timeout in seconds.
    timeout: float = Field(default=120.0, gt=0)
    #: Names of detected checks to skip ("mypy", "pytest", ...).
    disable: tuple[str, ...] = ()
    #: Extra globs of files and directories to leave out of scanning.
    exclude: tuple[str, ...] = ()
    #: The project's tests: ``auto`` runs them where the sandbox contains them (else only
    #: collects), ``run``, ``collect`` (pytest collection only), ``off``.
    tests: Literal["auto", "run", "collect", "off"] = "auto"
    #: The older name of ``tests`` (used when ``tests`` is left at ``auto``).
    pytest: Literal["auto", "collect", "run", "off"] = "auto"
    #: Seconds the first snapshot may spend on the whole test suite; beyond it the suite is
    #: only collected, plus the test files the task names.
    test_budget: float = Field(default=120.0, gt=0)
    #: Linters and type checkers to run although the project does not declare them
    #: ("ruff", "mypy", "pyright", "flake8"): the user asked for them.
    tools: tuple[str, ...] = ()
    #: Python type checker: auto prefers pyright when the project configures it, else mypy.
    type_checker: Literal["auto", "mypy", "pyright", "off"] = "auto"
    #: After an edit, take the warm language server's diagnostics for the edited files instead
    #: of re-running the same tool's CLI check (``auto``: when the model's semantic tools
    #: already started that server; never started just for this). docs/intel.md.
    language_server_checks: Literal["auto", "off"] = "auto"
    #: How many checks run at once.
    max_parallel: int = Field(default=2, ge=1, le=16)
    #: Explicit checks; one named like a detected check replaces it.
    checks: tuple[CheckSpec, ...] = ()

    @property
    def test_mode(self) -> Literal["auto", "run", "collect", "off"]:
        """``tests``, or the older ``pytest`` key when ``tests`` is left at ``auto``."""
        return self.pytest if self.tests == "auto" else self.tests


def parse_config(data: Mapping[str, Any], *, origin: str = "<config>") -> IntelConfig:
    """Validate a configuration table; raise :class:`IntelConfigError` naming what is wrong."""
    try:
        return IntelConfig.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(table)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise IntelConfigError(
            f"invalid diagnostics configuration in {origin}: {problems}", origin=origin
        ) from exc


def config_table(text: str, *, origin: str) -> Mapping[str, Any] | None:
    """The diagnostics table of one TOML file's text, or None when it has none.

    ``origin`` decides where the table lives: ``pyproject.toml`` keeps it under
    ``[tool.driveros.diagnostics]``, ``.driveros.toml`` under ``[diagnostics]``.
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise IntelConfigError(f"{origin} is not valid TOML: {exc}", origin=origin) from exc
    node: Any = doc
    path = (
        ("tool", "driveros", "diagnostics")
        if origin.endswith("pyproject.toml")
        else ("diagnostics",)
    )
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if not isinstance(node, dict):
        raise IntelConfigError(f"{origin}: {'.'.join(path)} must be a table", origin=origin)
    return node


def load_config(files: Mapping[str, str]) -> IntelConfig:
    """The configuration from the text of the workspace's config files (name → text).

    ``.driveros.toml`` wins over pyproject.toml; no table anywhere gives the defaults.
    """
    for name in (".driveros.toml", "pyproject.toml"):
        text = files.get(name)
        if text is None:
            continue
        table = config_table(text, origin=name)
        if table is not None:
            return parse_config(table, origin=name)
    return IntelConfig()


#: A configuration file bigger than this is not read.
_MAX_CONFIG_BYTES = 1 << 20


class WorkspaceConfig(BaseModel):
    """What :func:`read_workspace_config` found: the configuration, and what was wrong with
    the workspace's own (then the defaults are used)."""

    model_config = ConfigDict(frozen=True)

    config: IntelConfig = Field(default_factory=IntelConfig)
    #: Where the configuration came from (``.driveros.toml``, ``pyproject.toml``), if anywhere.
    origin: str | None = None
    problem: str | None = None


def read_small(path: Path) -> str | None:
    """A small regular file's text (None: missing, not a regular file, or too big)."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_CONFIG_BYTES:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            return fh.read(_MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None


def read_workspace_config(root: Path) -> WorkspaceConfig:
    """The diagnostics configuration of the user's workspace ``root``, read from disk now.

    Blocking (call it off the event loop). Call it only for a trusted workspace, at run start,
    on the user's own tree: the result is handed to the feed, which never re-reads it.
    """
    for name in (".driveros.toml", "pyproject.toml"):
        text = read_small(root / name)
        if text is None:
            continue
        try:
            table = config_table(text, origin=name)
            if table is None:
                continue
            return WorkspaceConfig(config=parse_config(table, origin=name), origin=name)
        except IntelConfigError as exc:
            return WorkspaceConfig(origin=name, problem=f"{exc}; using the defaults")
    return WorkspaceConfig()


def has_workspace_config(root: Path) -> bool:
    """Whether ``root`` holds a diagnostics table (to tell the user it was not used)."""
    for name in CONFIG_FILES:
        text = read_small(root / name)
        if text is None:
            continue
        try:
            if config_table(text, origin=name) is not None:
                return True
        except IntelConfigError:
            return True
    return False

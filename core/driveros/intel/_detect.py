"""Toolchain detection: from the workspace's files, the project's declared build and the
tools the sandbox has, the checks (``BuildPlan``).

Only a tool that exists in the sandbox is planned (driveros.intel._probe); what the project
declares but the sandbox lacks, or what does not run here, is a one-line note of the plan.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from driveros.intel._config import CheckSpec, IntelConfig, ParserName
from driveros.intel._declared import DeclaredCheck, declaration_inputs, declared_build
from driveros.intel._plan import is_test_file, python_plan, test_plan
from driveros.intel._probe import Probe, node_bin

_TS_SOURCES = ("*.ts", "*.tsx", "*.mts", "*.cts", "*.js", "*.jsx", "*.mjs", "*.cjs")
_ESLINT_CONFIGS = (
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
    ".eslintrc",
    ".eslintrc.js",
    ".eslintrc.cjs",
    ".eslintrc.json",
    ".eslintrc.yml",
    ".eslintrc.yaml",
)
#: The analyzers ``go test`` itself runs before the tests: what the project's own build
#: already enforces (the full ``go vet`` set only where the project declares it).
_GO_TEST_VET = "-atomic -bool -buildtags -errorsas -ifaceassert -nilfunc -printf -stringintconv"
#: Where nested projects are looked for: the root and two levels below it.
_MAX_DEPTH = 2


def _dirs_with(files: Sequence[str], name: str) -> list[str]:
    """Directories (".", "web", ...) holding a file called ``name``, topmost first."""
    dirs = []
    for f in files:
        parts = f.split("/")
        if parts[-1] == name and len(parts) - 1 <= _MAX_DEPTH:
            dirs.append(posixpath.dirname(f) or ".")
    dirs.sort(key=lambda d: (d.count("/"), d))
    return dirs


def _topmost(dirs: Sequence[str]) -> list[str]:
    """Drop directories nested in another one (a Cargo or Go workspace's members)."""
    kept: list[str] = []
    for d in dirs:
        if not any(k == "." or d.startswith(k + "/") for k in kept):
            kept.append(d)
    return kept


def _scoped(d: str, patterns: Sequence[str]) -> tuple[str, ...]:
    if d == ".":
        return tuple(patterns)
    return tuple(f"{d}/**/{p}" if "/" not in p else f"{d}/{p}" for p in patterns)


def _dir_check(tool: ParserName, d: str, command: str, triggers: Sequence[str]) -> CheckSpec:
    """A check of the project in directory ``d``, parsed and attributed as ``tool``'s."""
    return CheckSpec(
        name=tool if d == "." else f"{tool}:{d}",
        command=command,
        parser=tool,
        cwd=d,
        source=tool,
        triggers=_scoped(d, triggers),
    )


def _node_checks(files: Sequence[str], texts: Mapping[str, str], probe: Probe) -> list[CheckSpec]:
    checks: list[CheckSpec] = []
    for d in _dirs_with(files, "tsconfig.json"):
        tsc = node_bin(probe, d, "tsc")
        if tsc is not None:
            checks.append(
                _dir_check(
                    "tsc",
                    d,
                    f"{tsc} --noEmit --pretty false -p .",
                    (*_TS_SOURCES, "tsconfig*.json", "package.json"),
                )
            )
    eslint_dirs = {
        posixpath.dirname(f) or "." for f in files if posixpath.basename(f) in _ESLINT_CONFIGS
    }
    for f in files:
        if posixpath.basename(f) == "package.json" and '"eslintConfig"' in texts.get(f, ""):
            eslint_dirs.add(posixpath.dirname(f) or ".")
    for d in _topmost(sorted(eslint_dirs, key=lambda x: (x.count("/"), x))):
        eslint = node_bin(probe, d, "eslint")
        if eslint is not None:
            checks.append(
                _dir_check(
                    "eslint",
                    d,
                    f"{eslint} -f json .",
                    (*_TS_SOURCES, *_ESLINT_CONFIGS, "package.json"),
                )
            )
    return checks


def _native_checks(files: Sequence[str], probe: Probe) -> list[CheckSpec]:
    checks: list[CheckSpec] = []
    go, cargo = probe.first("go"), probe.first("cargo")
    if go:
        checks += [
            _dir_check(
                "go",
                d,
                f"{go} build -o /dev/null ./... && {go} vet {_GO_TEST_VET} ./...",
                ("*.go", "go.mod", "go.sum", "go.work"),
            )
            for d in _topmost(_dirs_with(files, "go.mod"))
        ]
    if cargo:
        checks += [
            _dir_check(
                "cargo",
                d,
                f"{cargo} check --message-format=json --quiet --all-targets",
                ("*.rs", "Cargo.toml", "Cargo.lock"),
            )
            for d in _topmost(_dirs_with(files, "Cargo.toml"))
        ]
    return checks


@dataclass(frozen=True)
class BuildPlan:
    """The detected build: the checks, what the project declares (with where), and one line
    per declared check that does not run here and why."""

    checks: tuple[CheckSpec, ...] = ()
    declared: tuple[DeclaredCheck, ...] = ()
    notes: tuple[str, ...] = field(default=())


def detect_build(
    files: Sequence[str],
    texts: Mapping[str, str],
    probe: Probe,
    config: IntelConfig,
    *,
    cache: str,
    contained: bool = False,
) -> BuildPlan:
    """The checks to run: the project's declared build on the tools the sandbox has (unless
    ``auto`` is off), minus ``disable``, with configured checks replacing detected ones of the
    same name.

    ``texts`` holds the text of :func:`detection_inputs` (Makefile, tox.ini, package.json,
    pyproject.toml, CI workflows ...); ``cache`` is a directory outside the workspace for tool
    caches (shell syntax allowed, e.g. ``${TMPDIR:-/tmp}/...``); ``contained``: the sandbox
    contains what it runs, so the project's tests run by default.
    """
    declared = declared_build(files, texts)
    detected: list[CheckSpec] = []
    notes: list[str] = []
    if config.auto:
        py = python_plan(files, texts, probe, config, declared, cache=cache)
        tests = test_plan(files, probe, config, declared, contained=contained)
        detected += py.checks + tests.checks
        notes += py.notes + tests.notes
        detected += _node_checks(files, texts, probe)
        detected += _native_checks(files, probe)
    disabled = set(config.disable)
    explicit = {c.name: c for c in config.checks}
    plan = [c for c in detected if c.name not in disabled and c.name not in explicit]
    plan += [c for c in config.checks if c.name not in disabled]
    return BuildPlan(checks=tuple(plan), declared=declared, notes=tuple(notes))


def detect_checks(
    files: Sequence[str],
    texts: Mapping[str, str],
    probe: Probe,
    config: IntelConfig,
    *,
    cache: str,
    contained: bool = False,
) -> tuple[CheckSpec, ...]:
    """The checks of :func:`detect_build`."""
    return detect_build(files, texts, probe, config, cache=cache, contained=contained).checks


def detection_inputs(files: Sequence[str]) -> list[str]:
    """The files whose text :func:`detect_build` reads."""
    wanted = {"mypy.ini", ".mypy.ini", ".driveros.toml"}
    out = [f for f in files if f in wanted]
    out += [f for f in declaration_inputs(files) if f not in out]
    out += [
        f
        for f in files
        if posixpath.basename(f) == "package.json" and f.count("/") <= _MAX_DEPTH and f not in out
    ]
    return out


def node_dirs(files: Sequence[str]) -> list[str]:
    """Directories with a package.json or tsconfig.json (their node_modules/.bin is probed)."""
    return list(
        dict.fromkeys(_dirs_with(files, "package.json") + _dirs_with(files, "tsconfig.json"))
    )


def detection_markers(files: Sequence[str]) -> tuple[str, ...]:
    """Files whose presence changes the plan; when this set changes, detection reruns."""
    markers = {"tsconfig.json", "package.json", "go.mod", "Cargo.toml", "pyrightconfig.json"}
    markers |= {"Makefile", "makefile", "GNUmakefile", "tox.ini", "noxfile.py", ".flake8"}
    markers |= {"ruff.toml", ".ruff.toml", "mypy.ini", ".mypy.ini", "pytest.ini"}
    markers |= set(_ESLINT_CONFIGS)
    has_py = any(f.endswith((".py", ".pyi")) for f in files)
    has_tests = any(is_test_file(f) for f in files)
    chosen = [f for f in files if posixpath.basename(f) in markers and f.count("/") <= _MAX_DEPTH]
    return (*sorted(chosen), f"python={has_py}", f"tests={has_tests}")

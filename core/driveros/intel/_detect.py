"""Toolchain detection: from the workspace's files and the tools the sandbox has, the checks.

Only a tool that exists in the sandbox is planned (probed with ``command -v``); a project's
own ``.venv/bin`` or ``node_modules/.bin`` copy is preferred over one on PATH.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from driveros.intel._config import CheckSpec, IntelConfig, ParserName

PY_SOURCES = ("*.py", "*.pyi")
PY_CONFIG = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini")
_PY_TOOLS = ("ruff", "mypy", "pyright", "pytest", "python3", "python")
_VENVS = (".venv/bin", "venv/bin")
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
#: Where nested projects are looked for: the root and two levels below it.
_MAX_DEPTH = 2
# Directories whose Python files are tool output or dependencies, never the project's.
_PY_EXCLUDE = r"(^|/)(\.[^/]+|venv|node_modules|build|dist|site-packages|__pycache__)/"


@dataclass(frozen=True)
class Probe:
    """What the sandbox answered: the workspace root as it sees it and the tools it has."""

    roots: tuple[str, ...] = ()
    found: Mapping[str, str] = field(default_factory=dict)

    def first(self, *candidates: str) -> str | None:
        return next((c for c in candidates if c in self.found), None)


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


def probe_candidates(files: Sequence[str]) -> list[str]:
    """Every executable name or path worth asking the sandbox about."""
    names: list[str] = []
    for tool in _PY_TOOLS:
        names.extend(f"{v}/{tool}" for v in _VENVS)
        names.append(tool)
    for d in _dirs_with(files, "package.json") + _dirs_with(files, "tsconfig.json"):
        prefix = "" if d == "." else f"{d}/"
        names.extend(f"{prefix}node_modules/.bin/{t}" for t in ("tsc", "eslint"))
    names.extend(["tsc", "eslint", "go", "cargo"])
    return list(dict.fromkeys(names))


def probe_script(candidates: Sequence[str]) -> str:
    """A POSIX sh script printing the root (``pwd``, ``pwd -P``) and each found candidate."""
    quoted = " ".join(shlex.quote(c) for c in candidates)
    return (
        'printf "root\\t%s\\n" "$(pwd)" "$(pwd -P)"; '
        f"for c in {quoted}; do "
        'p=$(command -v "$c" 2>/dev/null) && printf "tool\\t%s\\t%s\\n" "$c" "$p"; '
        "done; true"
    )


def parse_probe(stdout: str) -> Probe:
    roots: list[str] = []
    found: dict[str, str] = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 2 and parts[0] == "root" and parts[1]:
            roots.append(parts[1])
        elif len(parts) == 3 and parts[0] == "tool":
            found[parts[1]] = parts[2]
    return Probe(roots=tuple(dict.fromkeys(roots)), found=found)


def is_test_file(path: str) -> bool:
    """Whether pytest would import ``path`` on its own (a test module or a conftest)."""
    name = posixpath.basename(path)
    return path.endswith(".py") and (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    )


def _has_tests(files: Sequence[str]) -> bool:
    return any(is_test_file(f) for f in files)


def _tool(probe: Probe, name: str) -> str | None:
    return probe.first(*(f"{v}/{name}" for v in _VENVS), name)


def _mypy_target(texts: Mapping[str, str]) -> str:
    """``""`` when the project's mypy config names its files, else the directory to check."""
    configured = False
    for name, section in (("pyproject.toml", "[tool.mypy]"), ("setup.cfg", "[mypy]")):
        text = texts.get(name, "")
        if section in text:
            configured = True
            body = text.split(section, 1)[1].split("\n[", 1)[0]
            if re.search(r"^\s*(files|packages|modules)\s*=", body, re.MULTILINE):
                return ""
    for name in ("mypy.ini", ".mypy.ini"):
        if name in texts:
            configured = True
            if re.search(r"^\s*(files|packages|modules)\s*=", texts[name], re.MULTILINE):
                return ""
    return "." if configured else f"--exclude {shlex.quote(_PY_EXCLUDE)} ."


def _python_checks(
    files: Sequence[str], texts: Mapping[str, str], probe: Probe, config: IntelConfig, cache: str
) -> list[CheckSpec]:
    if not any(f.endswith((".py", ".pyi")) for f in files):
        return []
    triggers = (*PY_SOURCES, *PY_CONFIG)
    checks: list[CheckSpec] = []
    ruff = _tool(probe, "ruff") if "ruff" not in config.disable else None
    if ruff:
        base = f"{ruff} check --output-format json --no-cache --exit-zero --force-exclude"
        checks.append(
            CheckSpec(
                name="ruff",
                command=f"{base} .",
                # ruff before 0.1 spelled it --format and had no `check` subcommand
                fallback_command=f"{ruff} --format json --no-cache --exit-zero --force-exclude .",
                files_command=f"{base} {{files}}",
                per_file=PY_SOURCES,
                parser="ruff",
                triggers=(*triggers, "ruff.toml", ".ruff.toml"),
            )
        )
    python = probe.first(*(f"{v}/python" for v in _VENVS), "python3", "python")
    if python and not ruff:
        # the floor when no linter is around: at least every file must compile
        env = f'PYTHONPYCACHEPREFIX="{cache}/pycache"'
        checks.append(
            CheckSpec(
                name="compileall",
                command=f"{env} {python} -m compileall -q -x {shlex.quote(_PY_EXCLUDE)} .",
                files_command=f"{env} {python} -m compileall -q {{files}}",
                per_file=PY_SOURCES,
                parser="compileall",
                triggers=PY_SOURCES,
            )
        )
    checks.extend(_type_checker(texts, probe, config, cache, triggers, files))
    pytest = _tool(probe, "pytest")
    if pytest and _has_tests(files) and config.pytest != "off":
        flags = "--co" if config.pytest == "collect" else "--tb=line -rfE"
        checks.append(
            CheckSpec(
                name="pytest",
                command=f"PYTHONDONTWRITEBYTECODE=1 {pytest} -q -p no:cacheprovider {flags}",
                parser="pytest",
                # a test run may read any file; collection only Python and its config
                triggers=(*triggers, "pytest.ini") if config.pytest == "collect" else (),
                pytest_closure=True,
                timeout=max(config.timeout, 300.0) if config.pytest == "run" else None,
            )
        )
    return checks


def _type_checker(
    texts: Mapping[str, str],
    probe: Probe,
    config: IntelConfig,
    cache: str,
    triggers: tuple[str, ...],
    files: Sequence[str],
) -> list[CheckSpec]:
    mypy, pyright = _tool(probe, "mypy"), _tool(probe, "pyright")
    wants_pyright = "pyrightconfig.json" in files or "[tool.pyright]" in texts.get(
        "pyproject.toml", ""
    )
    choice = config.type_checker
    if choice == "auto":
        if pyright and wants_pyright:
            choice = "pyright"
        elif mypy:
            choice = "mypy"
        elif pyright:
            choice = "pyright"
        else:
            return []
    if choice == "pyright" and pyright:
        return [
            CheckSpec(
                name="pyright",
                command=f"{pyright} --outputjson",
                parser="pyright",
                triggers=(*triggers, "pyrightconfig.json"),
            )
        ]
    if choice == "mypy" and mypy:
        target = _mypy_target(texts)
        common = f'--cache-dir "{cache}/mypy" {target}'.rstrip()
        text_flags = "--show-column-numbers --show-error-codes --no-pretty --no-error-summary"
        return [
            CheckSpec(
                name="mypy",
                command=f"{mypy} -O json {common}",
                fallback_command=f"{mypy} {text_flags} {common}",
                parser="mypy",
                triggers=(*triggers, "mypy.ini", ".mypy.ini"),
            )
        ]
    return []


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


def _node_bin(probe: Probe, d: str, tool: str) -> str | None:
    """The project's own ``node_modules/.bin`` copy of ``tool`` in ``d``, else one on PATH."""
    prefix = "" if d == "." else f"{d}/"
    if f"{prefix}node_modules/.bin/{tool}" in probe.found:
        return f"./node_modules/.bin/{tool}"
    return probe.first(tool)


def _node_checks(files: Sequence[str], texts: Mapping[str, str], probe: Probe) -> list[CheckSpec]:
    checks: list[CheckSpec] = []
    for d in _dirs_with(files, "tsconfig.json"):
        tsc = _node_bin(probe, d, "tsc")
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
        eslint = _node_bin(probe, d, "eslint")
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
                f"{go} build -o /dev/null ./... && {go} vet ./...",
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


def detect_checks(
    files: Sequence[str],
    texts: Mapping[str, str],
    probe: Probe,
    config: IntelConfig,
    *,
    cache: str,
) -> tuple[CheckSpec, ...]:
    """The checks to run: detected ones (unless ``auto`` is off), minus ``disable``, with
    configured checks replacing detected ones of the same name.

    ``texts`` holds the text of the small config files detection reads (pyproject.toml,
    setup.cfg, mypy.ini, package.json ...); ``cache`` is a directory outside the workspace
    for tool caches (shell syntax allowed, e.g. ``${TMPDIR:-/tmp}/...``).
    """
    detected: list[CheckSpec] = []
    if config.auto:
        detected += _python_checks(files, texts, probe, config, cache)
        detected += _node_checks(files, texts, probe)
        detected += _native_checks(files, probe)
    disabled = set(config.disable)
    explicit = {c.name: c for c in config.checks}
    plan = [c for c in detected if c.name not in disabled and c.name not in explicit]
    plan += [c for c in config.checks if c.name not in disabled]
    return tuple(plan)


def detection_inputs(files: Sequence[str]) -> list[str]:
    """The files whose text :func:`detect_checks` reads."""
    wanted = {"pyproject.toml", "setup.cfg", "mypy.ini", ".mypy.ini", ".driveros.toml"}
    out = [f for f in files if f in wanted]
    out += [
        f for f in files if posixpath.basename(f) == "package.json" and f.count("/") <= _MAX_DEPTH
    ]
    return out


def detection_markers(files: Sequence[str]) -> tuple[str, ...]:
    """Files whose presence changes the plan; when this set changes, detection reruns."""
    markers = {"tsconfig.json", "package.json", "go.mod", "Cargo.toml", "pyrightconfig.json"}
    markers |= set(_ESLINT_CONFIGS)
    has_py = any(f.endswith((".py", ".pyi")) for f in files)
    has_tests = _has_tests(files)
    chosen = [f for f in files if posixpath.basename(f) in markers and f.count("/") <= _MAX_DEPTH]
    return (*sorted(chosen), f"python={has_py}", f"tests={has_tests}")

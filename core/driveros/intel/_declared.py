"""The project's declared build: the test, lint and type-check commands it already keeps.

Read from the files projects keep them in: ``Makefile`` targets, ``tox.ini`` envs,
``noxfile.py`` sessions, ``package.json`` scripts, ``.pre-commit-config.yaml`` hooks, CI
workflow steps (``.github/workflows/*.yml``, ``.gitlab-ci.yml``), and the tool tables of
``pyproject.toml``/``setup.cfg``/``tox.ini`` (a tool configured there is one the project
uses). Each command is mapped to a tool the feed knows how to read (unittest, pytest, jest,
vitest, node:test, go test, cargo test, flake8, ruff, mypy, pyright, stubtest, eslint, tsc,
black/prettier ``--check``); what maps to none is left out.

Everything here is text from a hostile repository: it is parsed, never evaluated, and the
commands built from it run only through the sandbox. AGENTS.md "checks" will be one more
source (:data:`EXTRA_SOURCES`).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from driveros.intel._declared_files import (
    MAX_LINES,
    ini_sections,
    make_targets,
    nox_commands,
    npm_scripts,
    tox_envs,
    tox_selected,
    workflow_runs,
)

Kind = Literal["test", "lint", "types", "format"]

#: Makefile targets and package.json scripts that hold a project's checks.
_TARGETS = ("test", "tests", "check", "lint", "typecheck", "type-check", "types", "coverage")
_MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
_MAX_DEPTH = 3  # make/npm/tox indirections followed


class DeclaredCheck(BaseModel):
    """One check the project declares: the tool, what for, its arguments, where from."""

    model_config = ConfigDict(frozen=True)

    tool: str
    kind: Kind
    #: Arguments after the tool (make variables and tox substitutions left out).
    args: tuple[str, ...] = ()
    #: Where it was found: ``Makefile:test``, ``tox.ini [testenv]``, ``setup.cfg [flake8]``.
    origin: str
    #: A command line the project runs (False: a configuration table or a pre-commit hook,
    #: which say the tool is used, not how it is invoked).
    command: bool = True


#: More sources of declared commands (origin, command lines), e.g. AGENTS.md "checks":
#: callers may pass them to :func:`declared_build`.
EXTRA_SOURCES: tuple[tuple[str, tuple[str, ...]], ...] = ()

_WRAPPERS = (
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("hatch", "run"),
    ("pdm", "run"),
    ("pnpm", "exec"),
    ("npx",),
    ("time",),
    ("exec",),
    ("command",),
)
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SUBST = re.compile(r"\$\(|\$\{|\{[a-z_]+(:[^}]*)?\}|^\$[A-Za-z_]")


def _drop_substitutions(args: Sequence[str]) -> tuple[str, ...]:
    return tuple(a for a in args if not _SUBST.search(a))


def _strip_wrappers(argv: list[str]) -> list[str]:
    changed = True
    while argv and changed:
        changed = False
        while argv and _ENV_ASSIGN.match(argv[0]):
            argv = argv[1:]
            changed = True
        for wrapper in _WRAPPERS:
            if tuple(argv[: len(wrapper)]) == wrapper:
                argv = argv[len(wrapper) :]
                changed = True
        # coverage run [opts] -m MODULE ...: the module is what runs; nyc/c8 wrap a command
        if argv[:2] in (["coverage", "run"], ["python-coverage", "run"]) and "-m" in argv:
            argv = ["python", *argv[argv.index("-m") :]]
            changed = True
        elif argv and argv[0] in ("nyc", "c8"):
            rest = argv[1:]
            while rest and rest[0].startswith("-"):
                rest = rest[1:]
            argv, changed = rest, True
    return argv


def _is_python(word: str) -> bool:
    base = posixpath.basename(word)
    return bool(re.fullmatch(r"python[0-9.]*|pypy[0-9.]*|\{envpython\}|\$\(PYTHON\)", base))


def _tool_of(argv: list[str]) -> tuple[str, Kind, tuple[str, ...]] | None:
    """(tool, kind, args) of one simple command, or None when it is no known check."""
    argv = _strip_wrappers(argv)
    if not argv:
        return None
    head = posixpath.basename(argv[0])
    rest = argv[1:]
    if _is_python(argv[0]) or argv[0] in ("{envpython}", "$(PYTHON)", "${PYTHON}"):
        if len(rest) >= 2 and rest[0] == "-m":
            head, rest = rest[1], rest[2:]
        else:
            return None
    flags = set(rest)
    match head:
        case "unittest":
            return "unittest", "test", _drop_substitutions(rest)
        case "pytest" | "py.test":
            return "pytest", "test", _drop_substitutions(rest)
        case "flake8":
            return "flake8", "lint", _drop_substitutions(rest)
        case "ruff":
            if rest[:1] == ["format"]:
                return ("ruff-format", "format", ()) if "--check" in flags else None
            return "ruff", "lint", _drop_substitutions(rest[1:] if rest[:1] == ["check"] else rest)
        case "mypy":
            return "mypy", "types", _drop_substitutions(rest)
        case "stubtest" | "mypy.stubtest":
            return "stubtest", "types", _drop_substitutions(rest)
        case "pyright" | "basedpyright":
            return "pyright", "types", _drop_substitutions(rest)
        case "black":
            return ("black", "format", _drop_substitutions(rest)) if "--check" in flags else None
        case "prettier":
            if "--check" in flags or "-c" in flags:
                return "prettier", "format", _drop_substitutions(rest)
            return None
        case "eslint":
            return "eslint", "lint", _drop_substitutions(rest)
        case "tsc":
            return "tsc", "types", _drop_substitutions(rest)
        case "jest" | "vitest" | "mocha" | "tape":
            return head, "test", _drop_substitutions(rest)
        case "node" if "--test" in flags:
            return "node-test", "test", _drop_substitutions(rest)
        case "go" if rest[:1] == ["test"]:
            return "go-test", "test", _drop_substitutions(rest[1:])
        case "go" if rest[:1] == ["vet"]:
            return "go-vet", "lint", _drop_substitutions(rest[1:])
        case "cargo" if rest[:1] == ["test"]:
            return "cargo-test", "test", _drop_substitutions(rest[1:])
        case "cargo" if rest[:1] == ["clippy"]:
            return "cargo-clippy", "lint", ()
    return None


def _segments(line: str) -> Iterator[list[str]]:
    """The simple commands of one shell line (split on ``&&``, ``||``, ``;``, ``|``)."""
    for part in re.split(r"&&|\|\||;|\|", line):
        try:
            argv = shlex.split(part, comments=True)
        except ValueError:
            continue
        while argv and argv[0] in ("-", "@", "+", "@-", "-@"):
            argv = argv[1:]
        if argv:
            argv[0] = argv[0].lstrip("@-+")
        if argv and argv[0]:
            yield argv


class _Reader:
    """Follows a project's command lines through make, npm and tox to the tools they run."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts = texts
        self._make = make_targets(next((texts[m] for m in _MAKEFILES if m in texts), ""))
        self._scripts = npm_scripts(texts.get("package.json", ""))
        self._tox = tox_envs(texts.get("tox.ini", ""))

    def lines(self, lines: Sequence[str], origin: str, depth: int = 0) -> list[DeclaredCheck]:
        out: list[DeclaredCheck] = []
        for line in lines[:MAX_LINES]:
            for argv in _segments(line):
                out.extend(self._command(argv, origin, depth))
        return out

    def _command(self, argv: list[str], origin: str, depth: int) -> list[DeclaredCheck]:
        found = _tool_of(argv)
        if found is not None:
            tool, kind, args = found
            return [DeclaredCheck(tool=tool, kind=kind, args=args, origin=origin)]
        if depth >= _MAX_DEPTH:
            return []
        head, rest = posixpath.basename(argv[0]), argv[1:]
        if head in ("make", "$(MAKE)", "${MAKE}", "gmake"):
            names = [a for a in rest if not a.startswith("-") and "=" not in a]
            return [
                c
                for name in names
                if name in self._make
                for c in self.lines(self._make[name], f"Makefile:{name}", depth + 1)
            ]
        if head in ("npm", "pnpm", "yarn", "bun"):
            script = rest[1] if rest[:1] in (["run"], ["run-script"]) and len(rest) > 1 else None
            if script is None and rest[:1] in (["test"], ["t"]):
                script = "test"
            if script is None and head in ("yarn", "pnpm") and rest:
                script = rest[0]
            if script in self._scripts:
                line = self._scripts[script]
                return self.lines([line], f"package.json scripts.{script}", depth + 1)
        if head == "tox":
            envs = tox_selected(rest)
            return [
                c
                for env in envs or ["testenv"]
                if env in self._tox
                for c in self.lines(self._tox[env], f"tox.ini [{env}]", depth + 1)
            ]
        return []

    def all(self, extra: Sequence[tuple[str, Sequence[str]]] = ()) -> list[DeclaredCheck]:
        out: list[DeclaredCheck] = []
        for name in _TARGETS:
            if name in self._make:
                out += self.lines(self._make[name], f"Makefile:{name}")
        for env, commands in self._tox.items():
            out += self.lines(commands, f"tox.ini [{env}]")
        out += self.lines(nox_commands(self._texts.get("noxfile.py", "")), "noxfile.py")
        for name in _TARGETS:
            if name in self._scripts:
                out += self.lines([self._scripts[name]], f"package.json scripts.{name}")
        for path, text in sorted(self._texts.items()):
            if path.startswith(".github/workflows/") and path.endswith((".yml", ".yaml")):
                out += self.lines(workflow_runs(text), path)
            elif path == ".gitlab-ci.yml":
                out += self.lines(workflow_runs(text, key="-"), path)
        out += _pre_commit(self._texts.get(".pre-commit-config.yaml", ""))
        for origin, lines in (*EXTRA_SOURCES, *extra):
            out += self.lines(list(lines), origin)
        return out


_PRE_COMMIT_HOOKS: dict[str, tuple[str, Kind]] = {
    "flake8": ("flake8", "lint"),
    "ruff": ("ruff", "lint"),
    "ruff-check": ("ruff", "lint"),
    "black": ("black", "format"),
    "mypy": ("mypy", "types"),
    "pyright": ("pyright", "types"),
    "eslint": ("eslint", "lint"),
    "prettier": ("prettier", "format"),
}


def _pre_commit(text: str) -> list[DeclaredCheck]:
    out = []
    for m in re.finditer(r"^\s*-\s*id:\s*['\"]?([\w.-]+)", text[:200_000], re.MULTILINE):
        known = _PRE_COMMIT_HOOKS.get(m.group(1))
        if known is not None:
            tool, kind = known
            out.append(
                DeclaredCheck(
                    tool=tool,
                    kind=kind,
                    origin=f".pre-commit-config.yaml {m.group(1)}",
                    command=False,
                )
            )
    return out


def _configured(files: Sequence[str], texts: Mapping[str, str]) -> list[DeclaredCheck]:
    """Tools the project configures (a configuration file or table is a declaration)."""
    names = set(files)
    out: list[DeclaredCheck] = []
    pyproject = texts.get("pyproject.toml", "")
    cfg = ini_sections(texts.get("setup.cfg", ""))
    tox = ini_sections(texts.get("tox.ini", ""))

    def add(tool: str, kind: Kind, origin: str) -> None:
        out.append(DeclaredCheck(tool=tool, kind=kind, origin=origin, command=False))

    if re.search(r"^\[tool\.ruff[\].]", pyproject, re.MULTILINE):
        add("ruff", "lint", "pyproject.toml [tool.ruff]")
    for name in ("ruff.toml", ".ruff.toml"):
        if name in names:
            add("ruff", "lint", name)
    if ".flake8" in names:
        add("flake8", "lint", ".flake8")
    for label, sections in (("setup.cfg", cfg), ("tox.ini", tox)):
        if "flake8" in sections:
            add("flake8", "lint", f"{label} [flake8]")
        if "mypy" in sections:
            add("mypy", "types", f"{label} [mypy]")
    if re.search(r"^\[tool\.mypy\]", pyproject, re.MULTILINE):
        add("mypy", "types", "pyproject.toml [tool.mypy]")
    for name in ("mypy.ini", ".mypy.ini"):
        if name in names:
            add("mypy", "types", name)
    if "pyrightconfig.json" in names:
        add("pyright", "types", "pyrightconfig.json")
    if re.search(r"^\[tool\.pyright\]", pyproject, re.MULTILINE):
        add("pyright", "types", "pyproject.toml [tool.pyright]")
    if re.search(r"^\[tool\.basedpyright\]", pyproject, re.MULTILINE):
        add("pyright", "types", "pyproject.toml [tool.basedpyright]")
    if re.search(r"^\[tool\.pytest\.ini_options\]", pyproject, re.MULTILINE):
        add("pytest", "test", "pyproject.toml [tool.pytest.ini_options]")
    if "pytest.ini" in names:
        add("pytest", "test", "pytest.ini")
    if "tool:pytest" in cfg:
        add("pytest", "test", "setup.cfg [tool:pytest]")
    if "pytest" in tox:
        add("pytest", "test", "tox.ini [pytest]")
    return out


def declared_build(
    files: Sequence[str],
    texts: Mapping[str, str],
    *,
    extra: Sequence[tuple[str, Sequence[str]]] = (),
) -> tuple[DeclaredCheck, ...]:
    """Every check the project declares or configures, in the order found (commands first:
    Makefile, tox, nox, package.json, CI, pre-commit; then configuration tables). ``texts``
    holds the text of :func:`declaration_inputs`; ``extra`` adds (origin, command lines)."""
    found = _Reader(texts).all(extra) + _configured(files, texts)
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    out = []
    for check in found:
        key = (check.tool, check.args, check.origin)
        if key not in seen:
            seen.add(key)
            out.append(check)
    return tuple(out)


def declaration_inputs(files: Sequence[str]) -> list[str]:
    """The files whose text :func:`declared_build` reads."""
    wanted = {
        *_MAKEFILES,
        "tox.ini",
        "noxfile.py",
        "package.json",
        ".pre-commit-config.yaml",
        ".gitlab-ci.yml",
        "setup.cfg",
        "pyproject.toml",
    }
    out = [f for f in files if f in wanted]
    out += [
        f
        for f in files
        if f.startswith(".github/workflows/")
        and f.endswith((".yml", ".yaml"))
        and f.count("/") == 2
    ]
    return out


def first(checks: Sequence[DeclaredCheck], *tools: str) -> DeclaredCheck | None:
    """The first declared check of one of ``tools``, a command line before a bare table."""
    mine = [c for c in checks if c.tool in tools]
    return next((c for c in mine if c.command), mine[0] if mine else None)


#: Files whose presence is a declaration (a tool's own configuration file).
_MARKERS = (".flake8", "ruff.toml", ".ruff.toml", "mypy.ini", ".mypy.ini", "pyrightconfig.json")


def read_declared_build(root: Path) -> tuple[DeclaredCheck, ...]:
    """The declared build of the directory ``root``, read from disk (blocking; nothing is
    run): what ``driveros doctor`` shows. The feed reads the same files in its sandbox."""
    from driveros.intel._config import read_small

    names = [*_MAKEFILES, "tox.ini", "noxfile.py", "package.json", ".pre-commit-config.yaml"]
    names += [".gitlab-ci.yml", "setup.cfg", "pyproject.toml", "pytest.ini", *_MARKERS]
    workflows = root / ".github" / "workflows"
    try:
        found = sorted(p.name for p in workflows.iterdir() if p.suffix in (".yml", ".yaml"))
    except OSError:
        found = []
    names += [f".github/workflows/{n}" for n in found[:20]]
    texts = {n: t for n in names if (t := read_small(root / n)) is not None}
    return declared_build(list(texts), texts)

"""The checks of the project's declared build: its tests, and the linters, type checkers and
formatters it declares or configures (driveros.intel._declared), on the tools the sandbox has.

Only what the project uses makes findings by default: ruff only where the project declares
or configures it (elsewhere a floor of syntax errors and undefined names), mypy only where
configured or declared and then with the project's own targets, flake8/stubtest/black as the
project runs them. ``IntelConfig.tools`` adds a tool the user asks for. The project's tests
run where the sandbox contains them (``tests = "auto"``); elsewhere pytest only collects and
the plan says why the tests did not run.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from driveros.intel._config import CheckSpec, IntelConfig
from driveros.intel._declared import DeclaredCheck, first
from driveros.intel._probe import Probe, node_bin, own_tool, tool

PY_SOURCES = ("*.py", "*.pyi")
PY_CONFIG = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini")
# Directories whose Python files are tool output or dependencies, never the project's.
PY_EXCLUDE = r"(^|/)(\.[^/]+|venv|node_modules|build|dist|site-packages|__pycache__)/"
#: ruff rules that are real errors whatever the project's style: syntax, undefined names.
_FLOOR_RULES = "E9,F63,F7,F82"
_QUIET = "PYTHONDONTWRITEBYTECODE=1"


@dataclass
class Plan:
    """Checks to run and, one line each, what the project declares that will not run."""

    checks: list[CheckSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def is_test_file(path: str) -> bool:
    """Whether pytest would import ``path`` on its own (a test module or a conftest)."""
    name = path.rsplit("/", 1)[-1]
    return path.endswith(".py") and (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    )


_PATH_WORD = re.compile(r"[\w./-]+\.(?:py|js|ts|go|rs|mjs|cjs|tsx)\b")


def task_paths(text: str) -> list[str]:
    """Workspace-relative file paths a task's text names (``fix tests/test_x.py``): the feed's
    ``focus``, whose test files still run when the whole suite is over its budget."""
    found = (m.group(0).removeprefix("./") for m in _PATH_WORD.finditer(text[:20_000]))
    return list(dict.fromkeys(p for p in found if not p.startswith("/") and ".." not in p))


def _args(check: DeclaredCheck | None, default: str = ".") -> str:
    if check is None or not check.args:
        return default
    return shlex.join(check.args)


def _origin(check: DeclaredCheck | None, requested: bool) -> str:
    if check is not None:
        return check.origin
    return "settings (tools)" if requested else "convention"


def mypy_target(texts: Mapping[str, str]) -> str:
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
    return "." if configured else f"--exclude {shlex.quote(PY_EXCLUDE)} ."


class _Python:
    def __init__(
        self,
        files: Sequence[str],
        texts: Mapping[str, str],
        probe: Probe,
        config: IntelConfig,
        declared: Sequence[DeclaredCheck],
        cache: str,
    ) -> None:
        self.files, self.texts, self.probe, self.config = files, texts, probe, config
        self.declared, self.cache = declared, cache
        self.requested = set(config.tools)
        self.triggers = (*PY_SOURCES, *PY_CONFIG)
        self.plan = Plan()

    def missing(self, name: str, origin: str) -> None:
        self.plan.notes.append(f"{name} ({origin}): not installed in the sandbox; not run")

    def lint(self) -> None:
        disabled = set(self.config.disable)
        ruff = tool(self.probe, "ruff") if "ruff" not in disabled else None
        decl = first(self.declared, "ruff")
        linted = False
        if "ruff" not in disabled and (decl is not None or "ruff" in self.requested):
            if ruff is not None:
                self.plan.checks.append(self._ruff(ruff, "", _origin(decl, decl is None)))
                linted = True
            else:
                self.missing("ruff", _origin(decl, decl is None))
        flake = first(self.declared, "flake8")
        if (flake is not None or "flake8" in self.requested) and "flake8" not in disabled:
            exe = tool(self.probe, "flake8")
            origin = _origin(flake, flake is None)
            if exe is None:
                self.missing("flake8", origin)
            else:
                linted = True
                args = _args(flake)
                self.plan.checks.append(
                    CheckSpec(
                        name="flake8",
                        command=f"{exe} --exit-zero {args}",
                        files_command=f"{exe} --exit-zero {{files}}",
                        per_file=PY_SOURCES,
                        parser="flake8",
                        triggers=(*self.triggers, ".flake8"),
                        kind="lint",
                        origin=origin,
                    )
                )
        if linted:
            return
        python = self.probe.first(".venv/bin/python", "venv/bin/python", "python3", "python")
        if ruff is not None:
            # the floor: what is an error in any project, whatever its style
            floor = f"--isolated --select {_FLOOR_RULES}"
            self.plan.checks.append(self._ruff(ruff, floor, "floor (syntax, undefined names)"))
        elif python is not None:
            env = f'PYTHONPYCACHEPREFIX="{self.cache}/pycache"'
            self.plan.checks.append(
                CheckSpec(
                    name="compileall",
                    command=f"{env} {python} -m compileall -q -x {shlex.quote(PY_EXCLUDE)} .",
                    files_command=f"{env} {python} -m compileall -q {{files}}",
                    per_file=PY_SOURCES,
                    parser="compileall",
                    triggers=PY_SOURCES,
                    kind="build",
                    origin="floor (syntax errors)",
                )
            )

    def _ruff(self, ruff: str, extra: str, origin: str) -> CheckSpec:
        base = f"{ruff} check {extra} --output-format json --no-cache --exit-zero --force-exclude"
        base = " ".join(base.split())
        return CheckSpec(
            name="ruff",
            command=f"{base} .",
            # ruff before 0.1 spelled it --format and had no `check` subcommand
            fallback_command=f"{ruff} --format json --no-cache --exit-zero --force-exclude .",
            files_command=f"{base} {{files}}",
            per_file=PY_SOURCES,
            parser="ruff",
            triggers=(*self.triggers, "ruff.toml", ".ruff.toml"),
            kind="lint",
            origin=origin,
        )

    def types(self) -> None:
        choice = self.config.type_checker
        if choice == "off":
            return
        pyright_decl = first(self.declared, "pyright")
        mypy_decl = first(self.declared, "mypy")
        stub_decl = first(self.declared, "stubtest")
        asked = {"mypy", "pyright"} & self.requested
        # the user chose (settings): any copy will do. A type checker's verdict depends on its
        # version (another mypy finds other errors), so without the project's own targets
        # only its own copy speaks for it
        chosen = choice != "auto" or bool(asked)
        if choice == "auto":
            if "mypy" in asked or (mypy_decl is not None and mypy_decl.command):
                choice = "mypy"
            elif pyright_decl is not None or "pyright" in asked:
                choice = "pyright"
            elif stub_decl is not None and stub_decl.command:
                self._stubtest(stub_decl)
                return
            elif mypy_decl is not None:
                choice = "mypy"
            else:
                return  # the project uses no type checker: none by default
        decl = pyright_decl if choice == "pyright" else mypy_decl
        origin = _origin(decl, decl is None)
        # the project names what to check (pyright's config, mypy's files or its command
        # line): any copy of the tool will do; otherwise only the project's own
        targets = choice == "pyright" or mypy_target(self.texts) == ""
        targets = targets or bool(decl is not None and decl.command and decl.args)
        exe = tool(self.probe, choice) if chosen or targets else own_tool(self.probe, choice)
        if choice == "pyright":
            # basedpyright is pyright's fork with the same CLI and JSON: the project's own
            # choice first, else whichever is installed
            based = decl is not None and "basedpyright" in decl.origin
            found = (tool(self.probe, "basedpyright"), exe)
            exe = found[0] or found[1] if based else found[1] or found[0]
        if exe is None:
            where = (
                "installed in the sandbox" if chosen or targets else "in the project's virtualenv"
            )
            self.plan.notes.append(
                f"{choice} ({origin}): not {where}; not run"
                + ("" if chosen or targets else f' (tools = ["{choice}"] runs one from PATH)')
            )
            return
        if choice == "pyright":
            self.plan.checks.append(
                CheckSpec(
                    name="pyright",
                    command=f"{exe} --outputjson",
                    parser="pyright",
                    triggers=(*self.triggers, "pyrightconfig.json"),
                    kind="types",
                    origin=origin,
                )
            )
            return
        target = mypy_target(self.texts)
        if mypy_decl is not None and mypy_decl.command and mypy_decl.args:
            target = shlex.join(a for a in mypy_decl.args if a not in ("--pretty",))
        common = f'--cache-dir "{self.cache}/mypy" {target}'.rstrip()
        text_flags = "--show-column-numbers --show-error-codes --no-pretty --no-error-summary"
        self.plan.checks.append(
            CheckSpec(
                name="mypy",
                command=f"{exe} -O json {common}",
                fallback_command=f"{exe} {text_flags} {common}",
                parser="mypy",
                triggers=(*self.triggers, "mypy.ini", ".mypy.ini"),
                kind="types",
                origin=origin,
            )
        )

    def _stubtest(self, decl: DeclaredCheck) -> None:
        # what stubtest reports depends on the mypy version: only the project's own pinned
        # copy (its virtualenv) speaks for the project
        exe = own_tool(self.probe, "stubtest")
        if exe is None:
            self.plan.notes.append(
                f"stubtest ({decl.origin}): not in the project's virtualenv (its results depend "
                "on the project's mypy); not run"
            )
            return
        # stubtest imports the package at run time: from the project's directory
        env = 'PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"'
        self.plan.checks.append(
            CheckSpec(
                name="stubtest",
                command=f"{env} {exe} --mypy-config-file /dev/null {_args(decl, '')}".rstrip(),
                parser="stubtest",
                triggers=self.triggers,
                kind="types",
                origin=decl.origin,
            )
        )

    def formatters(self) -> None:
        decl = first(self.declared, "black")
        if decl is None or not decl.command or "black" in self.config.disable:
            return
        exe = tool(self.probe, "black")
        if exe is None:
            self.missing("black --check", decl.origin)
            return
        self.plan.checks.append(
            CheckSpec(
                name="black",
                command=f"{exe} {_args(decl, '--check .')}",
                parser="reformat",
                triggers=self.triggers,
                kind="format",
                origin=decl.origin,
            )
        )


def python_plan(
    files: Sequence[str],
    texts: Mapping[str, str],
    probe: Probe,
    config: IntelConfig,
    declared: Sequence[DeclaredCheck],
    *,
    cache: str,
) -> Plan:
    """The Python linters, type checker and formatter check of the project."""
    if not any(f.endswith((".py", ".pyi")) for f in files):
        return Plan()
    builder = _Python(files, texts, probe, config, declared, cache)
    builder.lint()
    builder.types()
    builder.formatters()
    return builder.plan


def test_plan(
    files: Sequence[str],
    probe: Probe,
    config: IntelConfig,
    declared: Sequence[DeclaredCheck],
    *,
    contained: bool,
) -> Plan:
    """The project's test command: run where the sandbox contains it (``tests = auto``),
    always with ``run``, collected only (pytest) or not at all otherwise."""
    plan = Plan()
    mode = config.test_mode
    if mode == "off":
        return plan
    run = mode == "run" or (mode == "auto" and contained)
    why = (
        "the sandbox cannot contain them (no OS sandbox here)"
        if mode == "auto"
        else f'the settings say tests = "{mode}"'
    )
    budget = config.test_budget
    py_decl = first(declared, "unittest", "pytest")
    python = probe.first(".venv/bin/python", "venv/bin/python", "python3", "python")
    pytest = tool(probe, "pytest")
    has_tests = any(is_test_file(f) for f in files)
    if py_decl is not None and py_decl.tool == "unittest" and python is not None:
        if run:
            args = shlex.join(a for a in py_decl.args if a not in ("-v", "--verbose"))
            plan.checks.append(
                CheckSpec(
                    name="unittest",
                    command=f"{_QUIET} {python} -m unittest {args}".rstrip(),
                    parser="unittest",
                    pytest_closure=True,
                    timeout=budget,
                    kind="test",
                    origin=py_decl.origin,
                )
            )
        else:
            plan.notes.append(f"unittest ({py_decl.origin}): tests not run: {why}")
    elif (
        pytest is not None and (has_tests or py_decl is not None) and "pytest" not in config.disable
    ):
        collect_flags = "-q -p no:cacheprovider --co"
        flags = "-q -p no:cacheprovider --tb=line -rfE" if run else collect_flags
        origin = py_decl.origin if py_decl is not None else "convention (test files)"
        plan.checks.append(
            CheckSpec(
                name="pytest",
                command=f"{_QUIET} {pytest} {flags}",
                budget_command=f"{_QUIET} {pytest} {collect_flags}" if run else None,
                parser="pytest",
                # a test run may read any file; collection only Python and its config
                triggers=() if run else (*PY_SOURCES, *PY_CONFIG, "pytest.ini"),
                pytest_closure=True,
                timeout=budget if run else None,
                kind="test",
                origin=origin,
            )
        )
        if not run:
            plan.notes.append(f"pytest ({origin}): collected only, tests not run: {why}")
    _native_tests(files, probe, declared, plan, run=run, why=why, budget=budget)
    return plan


def _native_tests(
    files: Sequence[str],
    probe: Probe,
    declared: Sequence[DeclaredCheck],
    plan: Plan,
    *,
    run: bool,
    why: str,
    budget: float,
) -> None:
    go = probe.first("go")
    if go is not None and "go.mod" in files:
        decl = first(declared, "go-test")
        origin = decl.origin if decl is not None else "convention (go.mod)"
        if run:
            plan.checks.append(
                CheckSpec(
                    name="go-test",
                    command=(
                        f"{go} list -m -f 'module {{{{.Path}}}}' 2>/dev/null; "
                        f"{go} test -json {_args(decl, './...')}"
                    ),
                    parser="gotest",
                    triggers=("*.go", "go.mod", "go.sum", "testdata/"),
                    timeout=budget,
                    kind="test",
                    origin=origin,
                    source="go",
                )
            )
        else:
            plan.notes.append(f"go test ({origin}): tests not run: {why}")
    prettier = first(declared, "prettier")
    exe = node_bin(probe, ".", "prettier") if prettier is not None else None
    if prettier is not None and prettier.command and exe is not None:
        plan.checks.append(
            CheckSpec(
                name="prettier",
                command=f"{exe} {_args(prettier, '--check .')}",
                parser="reformat",
                kind="format",
                origin=prettier.origin,
            )
        )
    node = first(declared, "tape", "node-test", "mocha", "vitest", "jest")
    if node is None or not node.origin.startswith("package.json"):
        return
    if not run:
        plan.notes.append(f"{node.tool} ({node.origin}): tests not run: {why}")
        return
    args = _args(node, "")
    commands = {
        "tape": (node_bin(probe, ".", "tape"), args),
        "mocha": (node_bin(probe, ".", "mocha"), f"--reporter tap {args}"),
        "vitest": (node_bin(probe, ".", "vitest"), f"run --reporter=tap {args}"),
        "node-test": (probe.first("node"), f"--test --test-reporter=tap {args}"),
    }
    commands["jest"] = (node_bin(probe, ".", "jest"), f"--ci --json --testLocationInResults {args}")
    exe, argv = commands.get(node.tool, (None, ""))
    if exe is None:
        plan.notes.append(f"{node.tool} ({node.origin}): no runner or parser here; not run")
        return
    plan.checks.append(
        CheckSpec(
            name=node.tool,
            command=f"{exe} {argv}".rstrip(),
            parser="jest" if node.tool == "jest" else "tap",
            triggers=(),
            timeout=budget,
            kind="test",
            origin=node.origin,
        )
    )

"""Record real tool output for the parser tests (tests/intel/data/).

    .venv/bin/python -m tests.intel.record              # every case whose tool exists
    .venv/bin/python -m tests.intel.record ruff mypy    # just these
    EXTRA_PATH=/opt/js/node_modules/.bin .venv/bin/python -m tests.intel.record tsc

Each case writes the sample project from tests/intel/_projects.py to a temporary directory,
lets a DiagnosticsFeed detect its checks, runs the named check's command through a
LocalSandbox, and saves stdout/stderr (the workspace path replaced by /WORKSPACE) as
``<case>.json`` plus what the parser makes of it as ``<case>.expected.json``. Review the
expected file by eye before committing it: it is the parsers' contract.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from driveros.intel import DiagnosticsFeed, IntelConfig, PathContext, parse_output
from driveros.sandbox import LocalSandbox
from tests.intel import _projects as P

DATA = Path(__file__).resolve().parent / "data"
ROOT = "/WORKSPACE"

#: case → (project, check name, config, use the fallback command)
CASES: dict[str, tuple[Mapping[str, str], str, IntelConfig, bool]] = {
    "ruff": (P.PYTHON, "ruff", IntelConfig(), False),
    "ruff_syntax": (P.PYTHON_SYNTAX, "ruff", IntelConfig(), False),
    "mypy": (P.PYTHON, "mypy", IntelConfig(), False),
    "mypy_text": (P.PYTHON, "mypy", IntelConfig(), True),
    "pyright": (P.PYTHON, "pyright", IntelConfig(type_checker="pyright"), False),
    "compileall": (P.PYTHON_SYNTAX, "compileall", IntelConfig(disable=("ruff",)), False),
    "pytest_collect": (P.PYTEST, "pytest", IntelConfig(), False),
    "pytest_run": (
        {k: v for k, v in P.PYTEST.items() if k != "tests/test_broken.py"},
        "pytest",
        IntelConfig(pytest="run"),
        False,
    ),
    "tsc": (P.TYPESCRIPT, "tsc", IntelConfig(), False),
    "eslint": (P.ESLINT, "eslint", IntelConfig(), False),
    "go": (P.GO, "go", IntelConfig(), False),
    "go_vet": (P.GO_VET, "go", IntelConfig(), False),
    "cargo": (P.RUST, "cargo", IntelConfig(), False),
}


async def record(case: str, env: Mapping[str, str]) -> bool:
    files, check, config, fallback = CASES[case]
    with tempfile.TemporaryDirectory(prefix=f"intel-{case}-") as tmp:
        root = P.write_project(Path(tmp) / "ws", files)
        async with LocalSandbox(root, base_env=env) as sandbox:
            feed = DiagnosticsFeed(sandbox, config=config)
            await feed.snapshot()
            spec = next((c for c in feed.checks if c.name == check), None)
            if spec is None:
                print(f"skip {case}: no {check} check planned (tool missing?)", file=sys.stderr)
                return False
            command = spec.fallback_command if fallback else spec.command
            assert command is not None
            result = await sandbox.run(command, cwd=spec.cwd, timeout=300)
            tool = command.split()[0] if "=" not in command.split()[0] else command.split()[1]
            flag = "version" if tool.endswith("go") else "--version"  # go has no --version
            version = await sandbox.run(f"{tool} {flag}", cwd=spec.cwd, timeout=60)
        roots = sorted({str(root), os.path.realpath(root)}, key=len, reverse=True)

        def scrub(text: str) -> str:
            for r in roots:
                text = text.replace(r, ROOT)
            return text

        record = {
            "case": case,
            "parser": spec.parser,
            "command": scrub(command),
            "version": (version.stdout or version.stderr).strip().splitlines()[0:1],
            "exit_code": result.exit_code,
            "stdout": scrub(result.stdout),
            "stderr": scrub(result.stderr),
        }
    parsed = parse_output(
        spec.parser,
        record["stdout"],
        record["stderr"],
        PathContext(roots=(ROOT,)),
        source=spec.label,
    )
    expected = {
        "items": [i.model_dump(mode="json") for i in parsed.items],
        "unparsed": parsed.unparsed,
    }
    (DATA / f"{case}.json").write_text(json.dumps(record, indent=2) + "\n")
    (DATA / f"{case}.expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    print(f"recorded {case}: {len(parsed.items)} items, {len(parsed.unparsed)} unparsed lines")
    return True


def main(argv: list[str]) -> int:
    extra = [p for p in os.environ.get("EXTRA_PATH", "").split(os.pathsep) if p]
    env = P.tool_env(*extra)
    DATA.mkdir(exist_ok=True)
    for case in argv or list(CASES):
        asyncio.run(record(case, env))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

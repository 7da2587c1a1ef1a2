"""Small real projects with known problems, shared by the live tests and the data recorder.

Each project is a mapping of workspace-relative path → file text. Line numbers quoted in
comments are what the tests assert; keep them in sync when editing a project.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

RUFF_CONFIG = '[project]\nname = "sample"\nversion = "0"\n\n[tool.ruff.lint]\nselect = ["E", "F"]\n'

PYTHON: Mapping[str, str] = {
    "pyproject.toml": RUFF_CONFIG,
    # line 1: F401 unused import; line 5: mypy return-value; line 8: F821 + mypy name-defined
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "import os\n\n\ndef double(x: int) -> str:\n    return x * 2\n\n\nVALUE = undefined_name\n"
    ),
    "pkg/util.py": "def ok(a: int) -> int:\n    return a + 1\n",
}

PYTHON_SYNTAX: Mapping[str, str] = {
    "pyproject.toml": RUFF_CONFIG,
    # line 1, column 7: the "(" is followed by ":"
    "broken.py": "def f(:\n    pass\n",
}

PYTEST: Mapping[str, str] = {
    "pyproject.toml": RUFF_CONFIG + '\n[tool.pytest.ini_options]\npythonpath = ["."]\n',
    "calc.py": "def add(a: int, b: int) -> int:\n    return a - b\n",
    # collection error: line 1 imports a module that does not exist
    "tests/test_broken.py": "import nonexistent_module  # noqa: F401\n",
    # test_add fails on line 5
    "tests/test_calc.py": (
        "from calc import add\n\n\ndef test_add() -> None:\n    assert add(2, 2) == 4\n"
    ),
}

TYPESCRIPT: Mapping[str, str] = {
    "tsconfig.json": '{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src"]}\n',
    "package.json": '{"name": "sample", "version": "0.0.0", "private": true}\n',
    # line 1 col 7: TS2322; line 2 col 12: TS7006
    "src/a.ts": 'const x: number = "s";\nfunction f(a) {\n  return a;\n}\nexport { x, f };\n',
}

ESLINT: Mapping[str, str] = {
    "package.json": '{"name": "sample", "version": "0.0.0", "private": true, "type": "module"}\n',
    "eslint.config.js": (
        "export default [\n"
        '  { files: ["**/*.js"], rules: { "no-unused-vars": "error", "no-undef": "warn" } },\n'
        "];\n"
    ),
    # line 1: unused `unused` (error); line 2: undefined `missing` (warning)
    "src/a.js": "const unused = 1;\nexport const y = missing + 1;\n",
}

GO: Mapping[str, str] = {
    "go.mod": "module example.com/sample\n\ngo 1.19\n",
    # main.go line 6 col 14: cannot use "s" as int; lib/lib.go line 5: vet printf
    "main.go": (
        'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar x int = "s"\n\tfmt.Println(x)\n}\n'
    ),
    "lib/lib.go": 'package lib\n\nimport "fmt"\n\nfunc F() { fmt.Printf("%d\\n", "s") }\n',
}

GO_VET: Mapping[str, str] = {
    "go.mod": "module example.com/sample\n\ngo 1.19\n",
    "main.go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Printf("%d\\n", "s") }\n',
}

RUST: Mapping[str, str] = {
    "Cargo.toml": '[package]\nname = "sample"\nversion = "0.1.0"\nedition = "2021"\n',
    # line 2 col 18: E0308 mismatched types; line 3: unused variable warning
    "src/main.rs": 'fn main() {\n    let x: i32 = "s";\n    let y = 1;\n    println!("{x}");\n}\n',
}


def write_project(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` under ``root`` (created) and return it."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def tool_env(*extra_bin: str) -> dict[str, str]:
    """The environment for the sandbox: ours, with this venv's bin first on PATH."""
    env = dict(os.environ)
    bins = [str(Path(sys.executable).parent), *extra_bin]
    env["PATH"] = os.pathsep.join([*bins, env.get("PATH", "")])
    for name in list(env):
        if name.startswith(("PYTEST_", "COV_")):
            del env[name]  # an inner pytest must not see the outer one's state
    # the sample projects need no plugins; loading this venv's (lsp, asyncio...) is slow
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def which(tool: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(tool, path=env.get("PATH"))

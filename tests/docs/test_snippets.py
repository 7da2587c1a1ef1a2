"""Every fenced shell block in README.md and docs/*.md works, or says it is an example.

A block (```sh, ```bash, ```shell, ```console) is executed unless the nearest non-blank line
above its fence is an HTML comment ``<!-- example -->`` (a reason may follow:
``<!-- example: needs a provider key -->``). Executed blocks run with ``bash -euo pipefail``
(``console`` blocks: the ``$ `` lines) in a fresh copy of a small git project, as in a clone
after ``make agent``: ``.venv`` is this virtualenv, ``.venv/bin`` leads PATH, and the only
provider is a scripted model (OpenAI wire) that lists the files, then answers, for each run.
A block passes when it exits 0 within the timeout without a traceback. docs/cli.md,
"Snippets in the docs", is the contributor's side of this.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.conftest import REPO_ROOT

SHELL_FENCES = ("sh", "bash", "shell", "console")
EXAMPLE_MARKER = re.compile(r"^\s*<!--\s*example\b.*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
TIMEOUT_S = 120
#: Each agent run of a block lists the files (a verified observation), then answers.
RUN_TURNS = [Turn(tool_calls=[ToolCallSpec("list_files", {})]), Turn(text="Done.")]


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int
    lang: str
    text: str
    example: bool

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"

    def script(self) -> str:
        if self.lang != "console":
            return self.text
        lines: list[str] = []
        continued = False
        for line in self.text.splitlines():
            if line.startswith("$ ") or continued:
                lines.append(line[2:] if line.startswith("$ ") and not continued else line)
                continued = line.endswith("\\")
        return "\n".join(lines) + "\n"


def doc_files() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def snippets(path: Path) -> list[Snippet]:
    """The shell blocks of one Markdown file, with their example marks."""
    found: list[Snippet] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence, lang = m.group("fence"), m.group("lang").lower()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if lang in SHELL_FENCES:
            above = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
            indent = len(m.group("indent"))
            body = "\n".join(ln[indent:] for ln in lines[i + 1 : end]) + "\n"
            found.append(Snippet(path, i + 1, lang, body, bool(EXAMPLE_MARKER.match(above))))
        i = end + 1
    return found


ALL = [s for path in doc_files() for s in snippets(path)]
EXECUTED = [s for s in ALL if not s.example]


def test_snippet_parser_reads_fences_marks_and_console_prompts(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n\n<!-- example: needs a key -->\n\n```sh\nmake agent\n```\n\n"
        "```console\n$ echo a \\\n  b\na b\n$ true\n```\n\n```python\nprint(1)\n```\n"
    )
    first, second = snippets(doc)
    assert (first.lang, first.example, first.line, first.text) == ("sh", True, 5, "make agent\n")
    assert (second.lang, second.example) == ("console", False)
    assert second.script() == "echo a \\\n  b\ntrue\n"


def test_the_docs_have_executed_snippets() -> None:
    assert any(s.path.name == "README.md" for s in EXECUTED)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small git project with the virtualenv where ``make agent`` leaves it."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (root / ".venv").symlink_to(Path(sys.prefix))
    git = ["git", "-c", "user.name=Docs", "-c", "user.email=docs@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / ".git" / "info" / "exclude").write_text(".venv\n")
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial"], cwd=root, check=True)
    return root


def _environ(project: Path, server: ScriptedModelServer) -> dict[str, str]:
    home = project.parent / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": f"{project / '.venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "GIT_AUTHOR_NAME": "Docs",
        "GIT_AUTHOR_EMAIL": "docs@example.com",
        "GIT_COMMITTER_NAME": "Docs",
        "GIT_COMMITTER_EMAIL": "docs@example.com",
        "OPENAI_API_KEY": "sk-docs-scripted",
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_MODEL": "scripted",
        "DRIVEROS_DIAGNOSTICS": "off",
    }


def _run(script: str, cwd: Path, env: dict[str, str]) -> tuple[int | None, str]:
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # no terminal; its whole process group is ours to stop
    )
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
        out = ""
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the block left running
        except ProcessLookupError:
            pass
        if code is None:
            out, _ = proc.communicate()
    return code, out


@pytest.mark.parametrize("snippet", EXECUTED, ids=[s.id for s in EXECUTED])
def test_doc_snippet_runs(snippet: Snippet, project: Path) -> None:
    async def go() -> tuple[int | None, str]:
        async with ScriptedModelServer(RUN_TURNS * 50) as server:
            env = _environ(project, server)
            return await asyncio.to_thread(_run, snippet.script(), project, env)

    code, out = asyncio.run(go())
    hint = f"{snippet.id} (mark it <!-- example --> if it cannot run here):\n{out[-3000:]}"
    assert code is not None, f"timed out after {TIMEOUT_S} s: {hint}"
    assert code == 0, f"exit {code}: {hint}"
    assert "Traceback (most recent call last)" not in out, hint

"""What the server reads of a run's result is a typed summary (``RunResult``) the runner builds
from the agent's ``Result``: the server reads fields, never ``getattr`` on an untyped value, and
the agent is still imported only when the first run starts."""

from __future__ import annotations

import ast

from driveros.agent import Result
from driveros.llm import Usage
from driveros_lsp import RunOutcome, RunRequest, RunResult
from driveros_lsp._runs import Run
from driveros_lsp.protocol_models import run_summary
from tests.server.test_imports import PACKAGE, _modules, python_output


def _run(outcome: RunOutcome | None) -> Run:
    return Run(
        run_id="r1",
        request=RunRequest(run_id="r1", task="fix it", workspace="/w"),
        state="proposed",
        outcome=outcome,
    )


def test_the_summary_carries_outcome_error_and_usage() -> None:
    usage = Usage(input_tokens=120, cache_read_tokens=80, cost_usd=0.25, cost_unknown=False)
    result = Result(
        run_id="r1", outcome="setup_error", exit_code=3, answer="why", error="no key", usage=usage
    )
    summary = RunResult.of(result)
    assert summary == RunResult(
        outcome="setup_error",
        answer="why",
        error="no key",
        cost_usd=0.25,
        cost_unknown=False,
        input_tokens=120,
        cached_tokens=80,
    )
    wire = run_summary(_run(RunOutcome(result=summary)))
    assert (wire.outcome, wire.cost_usd, wire.input_tokens, wire.cached_tokens) == (
        "setup_error",
        0.25,
        120,
        80,
    )


def test_a_restored_or_unfinished_run_has_no_usage() -> None:
    restored = run_summary(_run(RunOutcome(result=RunResult(outcome="answered", answer="kept"))))
    assert (restored.outcome, restored.cost_usd, restored.cost_unknown) == ("answered", None, False)
    assert (restored.input_tokens, restored.cached_tokens) == (0, 0)
    running = run_summary(_run(None))
    assert (running.outcome, running.cost_usd, running.input_tokens) == (None, None, 0)


def test_the_server_reads_no_attribute_by_name() -> None:
    found: list[str] = []
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                # the package's lazy ``__getattr__`` resolves its exported names
                and name != "driveros_lsp"
            ):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert found == []


def test_starting_the_server_does_not_import_the_agent() -> None:
    names = sorted(n for n in _modules() if not n.endswith("__main__"))
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "from driveros_lsp import create_server\n"
        "create_server()\n"
        # the run layer's options are the settings' base class; running a run is not loaded
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in"
        " (['driveros', 'agent'], ['driveros', 'review'], ['driveros', 'sandbox'])"
        " or m.startswith('driveros.runs._execute')))\n"
    )
    assert python_output(script) == "[]"

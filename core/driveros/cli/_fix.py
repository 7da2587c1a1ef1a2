"""What a ``driveros agent --fix`` run asks: the workspace-relative paths it looks at, the task
that names the build's errors as its targets, and the answer when there is nothing to fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from driveros._plural import count
from driveros._unicode import printable
from driveros.agent import Result
from driveros.cli._fail import hold_exit_status, stderr_line
from driveros.cli._output import result_json, summary_line
from driveros.cli._parser import UsageError
from driveros.diagnostics import DiagnosticItem, format_items
from driveros.runs import new_run_id


def fix_paths(given: list[str], root: Path) -> list[str]:
    """``--fix`` PATHs (relative to the current directory, or absolute) as workspace-relative
    paths; one outside the workspace is a usage error."""
    paths = []
    for raw in given:
        shown = printable(raw)
        try:
            full = (Path.cwd() / raw).resolve() if not Path(raw).is_absolute() else Path(raw)
            rel = full.resolve().relative_to(root)
        except (OSError, ValueError, RuntimeError) as exc:
            raise UsageError(
                f"driveros agent: error: --fix {shown}: not inside the workspace {root}"
            ) from exc
        paths.append(rel.as_posix())
    return paths


def fix_task(task: str, targets: list[DiagnosticItem]) -> str:
    """The task of a ``--fix`` run: the user's text (or a default) and the targets."""
    listing = format_items(targets, prefix="- ")
    if not task:
        return (
            f"Fix the {count(len(targets), 'error')} the build reports now, without breaking "
            f"anything else:\n{listing}"
        )
    return f"{task.rstrip()}\n\nThe build reports these errors now; fix them:\n{listing}"


def nothing_to_fix(
    fmt: str,
    write: Callable[[str], None],
    paths: list[str],
    checks: tuple[str, ...],
    elsewhere: int,
) -> int:
    """No model is called: the build reports no error where ``--fix`` looked. Says so on
    stderr and ``write``s the answered result in the output format ``fmt``; returns 0."""
    where = ", ".join(printable(p) for p in paths) or "the workspace"
    ran = ", ".join(checks) or "none apply here"
    message = f"nothing to fix: no errors in {where} (checks: {ran})"
    if elsewhere:
        # A syntax error elsewhere can stop a checker (mypy) before it reaches these paths.
        message += (
            f"; the build reports {count(elsewhere, 'error')} elsewhere, which may hide "
            "errors here: try --fix without paths"
        )
    stderr_line(f"driveros: {message}")
    result = Result(
        run_id=new_run_id(),
        outcome="answered",
        exit_code=0,
        answer=message,
        verified=bool(checks),
        targets_fixed=True,
    )
    hold_exit_status(0)
    if fmt in ("json", "ndjson"):
        write(result_json(result) + "\n")
    else:
        write(message + "\n" + summary_line(result) + "\n")
    return 0

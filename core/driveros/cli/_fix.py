"""What a ``driveros agent --fix`` run asks: the workspace-relative paths it looks at and the
task that names the build's errors as its targets."""

from __future__ import annotations

from pathlib import Path

from driveros._plural import count
from driveros._unicode import printable
from driveros.cli._parser import UsageError
from driveros.diagnostics import DiagnosticItem, format_items


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

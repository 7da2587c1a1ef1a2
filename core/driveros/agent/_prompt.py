"""The system prompt and the first user message of a run."""

from __future__ import annotations

from collections.abc import Sequence

from driveros.diagnostics import DiagnosticItem, format_items

SYSTEM_PROMPT = """\
You are driveros, a coding agent working inside a sandboxed copy of a software project.
Use the tools to look at the real state of the project before you answer: read files, search,
run the project's own tests and checks. Make focused edits with edit_file (exact text
replacement) or write_file. After changing code, run the relevant tests to prove the change.
Some actions may be refused by the approval policy; when that happens, do not ask for the same
action again: work with what is allowed or explain what you need.
When the task is done, reply with a short final answer and no tool call."""


def first_message(
    task: str, *, memories: Sequence[str] = (), targets: Sequence[DiagnosticItem] = ()
) -> str:
    parts = [task.strip()]
    if targets:
        parts.append("Diagnostics to fix:\n" + format_items(targets, prefix="- "))
    if memories:
        lines = ["Notes from earlier runs (possibly stale — verify with tools):"]
        lines += [f"- {m}" for m in memories]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)

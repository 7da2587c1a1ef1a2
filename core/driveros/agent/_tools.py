"""The model-facing tools (stable names) and their execution through a Sandbox.

Each tool's arguments are a pydantic model; its JSON Schema is what the model sees. Invalid
arguments and sandbox refusals become error results the model can read, never exceptions.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driveros._errors import DriverosError
from driveros._plural import count
from driveros._tool_names import TOOL_NAMES
from driveros.approval import ExternalTool
from driveros.diagnostics import DiagnosticsSnapshot, render_snapshot
from driveros.llm import ToolSpec
from driveros.sandbox import (
    MAX_FALLBACK_FILE,
    MAX_RANGE_BYTES,
    FileTooLargeError,
    LineRange,
    NotFoundError,
    NotTextError,
    PathEscapeError,
    PolicyError,
    RuntimeMissingError,
    Sandbox,
    SandboxClosedError,
    SandboxError,
    SearchMatch,
)
from driveros.semantic import SEMANTIC_TOOLS, SemanticTools, call_semantic

log = logging.getLogger(__name__)

_REFUSALS = (PathEscapeError, PolicyError, RuntimeMissingError, SandboxClosedError)

#: Characters of one tool result kept for the model (head and tail halves).
DEFAULT_OUTPUT_LIMIT = 16_000
MAX_RANGE_KB = MAX_RANGE_BYTES // 1024


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunArgs(_Args):
    command: str = Field(description="A shell command, run from the workspace root.")
    timeout: float | None = Field(
        default=None, gt=0, le=3600, description="Seconds before the command is killed."
    )


class ReadFileArgs(_Args):
    path: str = Field(description="Workspace-relative path.")
    offset: int | None = Field(default=None, ge=1, description="First line to read (1-based).")
    limit: int | None = Field(default=None, ge=1, description="Number of lines to read.")


class WriteFileArgs(_Args):
    path: str = Field(description="Workspace-relative path; parent folders are created.")
    content: str = Field(description="The whole new file content.")


class EditFileArgs(_Args):
    path: str = Field(description="Workspace-relative path.")
    old_string: str = Field(description="Exact text to replace; must be unique unless replace_all.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(default=False, description="Replace every occurrence.")


class SearchArgs(_Args):
    pattern: str = Field(description="Regular expression to search for.")
    path: str | None = Field(default=None, description="Folder or file to search (default: all).")
    glob: str | None = Field(default=None, description="Only files matching this glob.")


class ListFilesArgs(_Args):
    path: str | None = Field(default=None, description="Folder to list (default: the root).")


class DiagnosticsArgs(_Args):
    tool: str | None = Field(
        default=None,
        description="run this linter or type checker once although the project does not use "
        "it (ruff, mypy, pyright, flake8): its findings are shown, not the build's errors",
    )


_DESCRIPTIONS: dict[str, tuple[type[BaseModel], str]] = {
    "run": (RunArgs, "Run a shell command in the workspace and return its exit code and output."),
    "read_file": (ReadFileArgs, "Read a text file (optionally a range of lines)."),
    "write_file": (WriteFileArgs, "Create or overwrite a file with the given content."),
    "edit_file": (EditFileArgs, "Replace exact text in a file."),
    "search": (SearchArgs, "Search file contents with a regular expression."),
    "list_files": (ListFilesArgs, "List the entries of a folder."),
    "diagnostics": (DiagnosticsArgs, "The project's current build/lint/test diagnostics."),
    **SEMANTIC_TOOLS,
}
_SEMANTIC_ARGS = tuple(model for model, _ in SEMANTIC_TOOLS.values())


#: Runs one call of an :class:`ExtraTool`: (ok, output). Exceptions become error results.
ExtraToolCall = Callable[[dict[str, Any]], Awaitable[tuple[bool, str]]]


@dataclass(frozen=True)
class ExtraTool:
    """A tool from outside driveros (an MCP server's, see driveros.mcptools): what the model
    sees and how a call runs. Never read-only: every call goes through the run's approval."""

    spec: ToolSpec
    call: ExtraToolCall
    #: Whose tool it is and whether the user's config allows it unasked (the approval reads it).
    external: ExternalTool | None = None


@functools.cache
def _builtin_schemas() -> tuple[tuple[str, str, str], ...]:
    """(name, description, JSON Schema as text) of each built-in tool, made once per process
    (pydantic's schema generation cost a few milliseconds on every run's start)."""
    out = []
    for name, (model, description) in _DESCRIPTIONS.items():
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("properties", {})
        out.append((name, description, json.dumps(schema)))
    return tuple(out)


def tool_specs(extra: Sequence[ExtraTool] = ()) -> tuple[ToolSpec, ...]:
    """The tools as the model sees them (the built-in ones, then ``extra``). Each call gets
    its own schema dicts."""
    specs = [
        ToolSpec(name=name, description=description, parameters=json.loads(schema))
        for name, description, schema in _builtin_schemas()
    ]
    specs.extend(tool.spec for tool in extra if tool.spec.name not in _DESCRIPTIONS)
    return tuple(specs)


@dataclass
class ToolOutcome:
    ok: bool
    output: str
    #: The tool observed real state (counts toward a verified answer).
    observed: bool = False
    #: (path, "create"|"modify") for each file the tool changed.
    edits: list[tuple[str, str]] = field(default_factory=list)
    #: (path, line, column) of the places the answer names (1-based; the semantic tools).
    locations: list[tuple[str, int, int]] = field(default_factory=list)
    truncated: bool = False
    duration_ms: float = 0.0


def clip(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and tail of ``text`` within ``limit`` characters."""
    if len(text) <= limit:
        return text, False
    half = limit // 2
    dropped = len(text) - 2 * half
    return f"{text[:half]}\n[... {dropped} characters omitted ...]\n{text[-half:]}", True


#: At most this many names are listed per kind of file a search did not search.
MAX_NAMED = 20


def _named(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:MAX_NAMED])
    more = len(paths) - MAX_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def search_notes(results: Sequence[SearchMatch]) -> list[str]:
    """What a search did not look at, said plainly (an empty list when it looked at all)."""
    notes = []
    kinds = (
        ("skipped", "secret", "not searched (deny-listed)"),
        (
            "too_large",
            f"over {MAX_FALLBACK_FILE // (1024 * 1024)} MB",
            "not searched: read ranges of them with read_file",
        ),
        ("binary", "binary (a NUL byte)", "matching, lines not shown"),
        ("odd_names", "with names that are not UTF-8", "searched but not shown (escaped)"),
    )
    for attr, what, why in kinds:
        paths: tuple[str, ...] = getattr(results, attr, ())
        if paths:
            noun = count(len(paths), "file")
            notes.append(f"[{noun} {what}, {why}: {_named(paths)}]")
    return notes


def describe_range(part: LineRange) -> str:
    """The header of a ranged read: which lines of how many, and whether it was cut."""
    of = f" of {part.total}" if part.total is not None else f" of a {part.size}-byte file"
    if part.last < part.first:
        has = f"{part.total} lines" if part.total is not None else "fewer lines"
        return f"[no lines from {part.first}: the file has {has}]\n"
    cut = ""
    if part.capped:
        cut = f"; cut at {MAX_RANGE_KB} KB: read a smaller range"
    return f"[lines {part.first}-{part.last}{of}{cut}]\n"


#: The feed's current snapshot; called with a tool name, that tool run once on request.
Snapshotter = Callable[..., Awaitable[DiagnosticsSnapshot | None]]
#: Called with a file tool's ``path`` before the tool touches it (see :class:`ToolBox`).
BeforeFile = Callable[[str], Awaitable[None]]


class ToolBox:
    """Executes tool calls against one sandbox."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        diagnostics: Snapshotter | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        default_timeout: float = 120.0,
        extra: Sequence[ExtraTool] = (),
        before_file: BeforeFile | None = None,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._sandbox = sandbox
        #: Awaited before any tool runs (a review run: until its scratch copy's baseline is
        #: recorded, so nothing the agent writes can enter it).
        self._ready = ready
        #: Runs before read_file/write_file/edit_file touch their path (an editor's buffer is
        #: adopted into the copy then); its failures only cost that, never the tool call.
        self._before_file = before_file
        self._extra = {t.spec.name: t for t in extra if t.spec.name not in _DESCRIPTIONS}
        self._diagnostics = diagnostics
        self._limit = output_limit
        self._timeout = default_timeout
        #: The run's language servers, started on the first semantic tool call.
        self.semantic = SemanticTools(sandbox, before_file=before_file)

    async def aclose(self) -> None:
        """End the language servers (the sandbox's close ends them too)."""
        await self.semantic.aclose()

    async def call(self, name: str, arguments: dict[str, Any], raw: str | None) -> ToolOutcome:
        started = time.perf_counter()
        if self._ready is not None:
            try:
                await self._ready()
            except DriverosError as exc:
                return ToolOutcome(False, f"error: the workspace is not ready: {exc}")
        outcome = await self._dispatch(name, arguments, raw)
        # an added folder's files (absolute paths) are no language server's
        self.semantic.touched(path for path, _ in outcome.edits if not path.startswith("/"))
        outcome.output, outcome.truncated = clip(outcome.output, self._limit)
        outcome.duration_ms = (time.perf_counter() - started) * 1000
        return outcome

    async def _dispatch(self, name: str, arguments: dict[str, Any], raw: str | None) -> ToolOutcome:
        extra = self._extra.get(name)
        if extra is not None:
            return await _call_extra(extra, arguments, raw)
        entry = _DESCRIPTIONS.get(name)
        if entry is None:
            known = ", ".join([*TOOL_NAMES, *self._extra])
            return ToolOutcome(False, f"error: unknown tool {name!r}; available tools: {known}")
        if raw is not None:
            return ToolOutcome(False, f"error: arguments are not a JSON object: {raw[:200]!r}")
        try:
            args = entry[0].model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            return ToolOutcome(False, f"error: invalid arguments for {name}: {problems}")
        try:
            return await self._execute(args)
        except NotFoundError as exc:
            return ToolOutcome(False, f"error: {exc}", observed=True)
        except FileTooLargeError as exc:
            return ToolOutcome(
                False,
                f"error: {exc}; read_file reads a range of any file: give offset and limit "
                "(e.g. offset=1, limit=200), or use search",
                observed=True,
            )
        except NotTextError as exc:
            return ToolOutcome(
                False,
                f"error: {exc}; it is not text for read_file/edit_file: inspect it with "
                "`run` (e.g. `file PATH`, `od -c PATH | head`)",
                observed=True,
            )
        except _REFUSALS as exc:
            return ToolOutcome(False, f"refused by the sandbox: {exc}")
        except SandboxError as exc:
            return ToolOutcome(False, f"error: {exc}")
        except DriverosError as exc:
            return ToolOutcome(False, f"error: {exc}")
        except (OSError, UnicodeDecodeError) as exc:
            return ToolOutcome(False, f"error: {exc}")

    async def _execute(self, args: BaseModel) -> ToolOutcome:
        sb = self._sandbox
        touched = getattr(args, "path", None)
        if (
            self._before_file is not None
            and isinstance(args, (ReadFileArgs, WriteFileArgs, EditFileArgs, *_SEMANTIC_ARGS))
            and isinstance(touched, str)
        ):
            try:
                await self._before_file(touched)
            except (DriverosError, OSError) as exc:
                log.info("before %s: %s", touched, exc)
        if isinstance(args, _SEMANTIC_ARGS):
            found = await call_semantic(self.semantic, args)
            edits = [(path, "modify") for path in found.edits]
            return ToolOutcome(
                True, found.text, observed=not edits, edits=edits, locations=found.locations
            )
        match args:
            case RunArgs():
                res = await sb.run(args.command, timeout=args.timeout or self._timeout)
                parts = [f"exit code: {res.exit_code}"]
                if res.timed_out:
                    parts[0] = f"timed out after {args.timeout or self._timeout:g}s"
                if res.stdout:
                    parts.append(f"--- stdout ---\n{res.stdout.rstrip()}")
                if res.stderr:
                    parts.append(f"--- stderr ---\n{res.stderr.rstrip()}")
                return ToolOutcome(res.ok, "\n".join(parts), observed=True)
            case ReadFileArgs():
                if args.offset is None and args.limit is None:
                    return ToolOutcome(True, await sb.read_file(args.path), observed=True)
                part = await sb.read_lines(args.path, args.offset or 1, args.limit)
                return ToolOutcome(True, describe_range(part) + part.text, observed=True)
            case WriteFileArgs():
                try:
                    await sb.stat(args.path)
                    action = "modify"
                except NotFoundError:
                    action = "create"
                await sb.write_file(args.path, args.content)
                verb = "created" if action == "create" else "wrote"
                return ToolOutcome(
                    True,
                    f"{verb} {args.path} ({len(args.content)} characters)",
                    edits=[(args.path, action)],
                )
            case EditFileArgs():
                if args.old_string == args.new_string:
                    return ToolOutcome(False, "error: old_string and new_string are identical")
                replaced = await sb.edit(
                    args.path, args.old_string, args.new_string, replace_all=args.replace_all
                )
                plural = "s" if replaced != 1 else ""
                return ToolOutcome(
                    True,
                    f"edited {args.path}: {replaced} replacement{plural}",
                    edits=[(args.path, "modify")],
                )
            case SearchArgs():
                matches = await sb.search(args.pattern, path=args.path or ".", glob=args.glob)
                lines = [f"{m.path}:{m.line}: {m.text}" for m in matches] or ["no matches"]
                lines += search_notes(matches)
                return ToolOutcome(True, "\n".join(lines), observed=True)
            case ListFilesArgs():
                entries = await sb.list_dir(args.path or ".")
                names = []
                odd = 0
                for e in sorted(entries, key=lambda e: e.name):
                    name = e.name + ("/" if e.kind == "dir" else "")
                    if not e.addressable:
                        odd += 1
                        name += "  [name not UTF-8 (shown escaped): no path reaches it]"
                    names.append(name)
                if odd:
                    names.append(
                        f"[{count(odd, 'name')} shown escaped cannot be given to the file tools; "
                        "use `run` (e.g. `ls -b`, or rename with a shell glob)]"
                    )
                return ToolOutcome(True, "\n".join(names) or "(empty)", observed=True)
            case DiagnosticsArgs():
                snap = None
                if self._diagnostics is not None:
                    snap = await (
                        self._diagnostics(args.tool) if args.tool else self._diagnostics()
                    )
                if snap is None:
                    return ToolOutcome(
                        False, "no diagnostics feed is configured for this run; use `run`"
                    )
                return ToolOutcome(True, render_snapshot(snap), observed=True)
        return ToolOutcome(False, "error: unsupported tool")


async def _call_extra(tool: ExtraTool, arguments: dict[str, Any], raw: str | None) -> ToolOutcome:
    if raw is not None:
        return ToolOutcome(False, f"error: arguments are not a JSON object: {raw[:200]!r}")
    try:
        ok, output = await tool.call(arguments)
    except (DriverosError, OSError, ValueError) as exc:
        return ToolOutcome(False, f"error: {tool.spec.name} failed: {exc}")
    return ToolOutcome(ok, output)

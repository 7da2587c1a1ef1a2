"""Typed parameters of the driveros commands (one object argument each, camelCase).

Every value is bounded for what the server does with it (docs/protocol.md, "Errors"):
positions are LSP ``uinteger``s, a fact id fits SQLite's INTEGER, and free text (a task,
feedback, a diagnostic, a memory query or reason) has its lone surrogates escaped (``\\xff``),
since it is sent to a model and stored, which UTF-8 cannot do with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pygls.exceptions import JsonRpcInvalidParams

from driveros_lsp._wire import one_line, printable

#: LSP's ``uinteger`` (line and character numbers).
UINTEGER_MAX = 2**31 - 1
#: SQLite's INTEGER (a fact id).
SQLITE_INTEGER_MAX = 2**63 - 1
#: Longest lists a command takes (checked before their items are read).
MAX_DIAGNOSTICS = 1_000
MAX_PATHS = 10_000
MAX_FOLDERS = 100
#: An InvalidParams message names at most this many problems.
_PROBLEMS = 5


def _printable(value: Any) -> Any:
    return printable(value) if isinstance(value, str) else value


#: Free text: lone surrogates are escaped before validation (pydantic refuses them).
Text = Annotated[str, BeforeValidator(_printable)]


class _Params(BaseModel):
    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, populate_by_name=True, extra="forbid"
    )


class _Lenient(BaseModel):
    """LSP structures copied from the client: unknown fields are kept out, not refused."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class Position(_Lenient):
    line: int = Field(ge=0, le=UINTEGER_MAX)
    character: int = Field(ge=0, le=UINTEGER_MAX)


class Range(_Lenient):
    start: Position
    end: Position


class Diagnostic(_Lenient):
    range: Range
    message: Text
    severity: int | None = Field(default=None, ge=1, le=4)
    code: int | Text | None = None
    source: Text | None = None


class StartParams(_Params):
    task: Text = Field(min_length=1)
    uri: str | None = None
    range: Range | None = None
    #: Workspace folder URIs the task runs in: the first is its workspace, the others are
    #: added to it (docs/lsp-runs.md, "More than one folder").
    folders: list[str] | None = Field(default=None, min_length=1, max_length=MAX_FOLDERS)


class CommandParams(_Params):
    """``driveros.agent.command``: no ``name`` lists the commands; a name starts one."""

    name: Text | None = Field(default=None, min_length=1, max_length=200)
    #: ``$ARGUMENTS`` as typed (split on whitespace for ``$1``…), or the arguments one by one.
    arguments: Text | list[Text] = Field(default="")


class InlineAcceptedParams(_Params):
    """``driveros.inlineCompletion.accepted``: what the accepted item carried."""

    model: Text = Field(min_length=1, max_length=200)
    chars: int = Field(default=0, ge=0, le=UINTEGER_MAX)
    next_edit: bool = False


class FixParams(_Params):
    uri: str
    diagnostics: list[Diagnostic] = Field(default_factory=list, max_length=MAX_DIAGNOSTICS)
    #: Fix every problem in the file, not only ``diagnostics``.
    all: bool = False


class RunRef(_Params):
    run_id: str = Field(min_length=1)


class AcceptParams(RunRef):
    paths: list[str] | None = Field(default=None, max_length=MAX_PATHS)


class RejectParams(RunRef):
    paths: list[str] | None = Field(default=None, max_length=MAX_PATHS)
    feedback: Text | None = None


class FollowUpParams(RunRef):
    task: Text = Field(min_length=1)


class AgentAcceptParams(RunRef):
    through: int | None = Field(default=None, ge=0)


class RevertParams(RunRef):
    to: int = Field(ge=0)


class ListParams(_Params):
    pass


P = TypeVar("P", bound=_Params)


def parse(command: str, model: type[P], arguments: Sequence[Any]) -> P:
    """The one object argument of ``command`` as ``model``, or a JSON-RPC InvalidParams."""
    if model is ListParams and not arguments:
        return model()
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        raise JsonRpcInvalidParams(
            f"{command} expects exactly one object argument, got {len(arguments)} "
            + ("argument" if len(arguments) == 1 else "arguments")
        )
    try:
        return model.model_validate(arguments[0])
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(_field(p) for p in err['loc']) or 'params'}: {err['msg']}"
            for err in exc.errors(include_url=False, include_input=False)[:_PROBLEMS]
        )
        if exc.error_count() > _PROBLEMS:
            problems += f"; and {exc.error_count() - _PROBLEMS} more"
        raise JsonRpcInvalidParams(one_line(f"{command}: invalid params: {problems}")) from exc


def _field(part: str | int) -> str:
    """A field of the error's location as written, or quoted when it is not a plain name."""
    text = str(part)
    return text if isinstance(part, int) or text.isidentifier() else repr(text)


class RecallParams(_Params):
    query: Text = Field(min_length=1)
    limit: int = Field(default=8, ge=1, le=100)


class ForgetParams(_Params):
    id: int = Field(ge=1, le=SQLITE_INTEGER_MAX)
    why: Text = "forgotten by user"

"""Typed parameters of the driveros commands (one object argument each, camelCase)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pygls.exceptions import JsonRpcInvalidParams


class _Params(BaseModel):
    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, populate_by_name=True, extra="forbid"
    )


class _Lenient(BaseModel):
    """LSP structures copied from the client: unknown fields are kept out, not refused."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class Position(_Lenient):
    line: int = Field(ge=0)
    character: int = Field(ge=0)


class Range(_Lenient):
    start: Position
    end: Position


class Diagnostic(_Lenient):
    range: Range
    message: str
    severity: int | None = Field(default=None, ge=1, le=4)
    code: int | str | None = None
    source: str | None = None


class StartParams(_Params):
    task: str = Field(min_length=1)
    uri: str | None = None
    range: Range | None = None


class FixParams(_Params):
    uri: str
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    #: Fix every problem in the file, not only ``diagnostics``.
    all: bool = False


class RunRef(_Params):
    run_id: str = Field(min_length=1)


class AcceptParams(RunRef):
    paths: list[str] | None = None


class RejectParams(RunRef):
    paths: list[str] | None = None
    feedback: str | None = None


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
            f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}"
            for err in exc.errors()
        )
        raise JsonRpcInvalidParams(f"{command}: invalid params: {problems}") from exc


class RecallParams(_Params):
    query: str = Field(min_length=1)
    limit: int = Field(default=8, ge=1, le=100)


class ForgetParams(_Params):
    id: int = Field(ge=1)
    why: str = "forgotten by user"

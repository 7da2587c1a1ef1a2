"""The semantic tools' arguments (what the model sees) and their dispatch."""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from driveros.semantic._semantic import SemanticResult, SemanticTools


def _no_null_defaults(schema: dict[str, Any]) -> None:
    for prop in schema.get("properties", {}).values():
        if prop.get("default", 0) is None:
            del prop["default"]


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=_no_null_defaults)


def _optional(kind: str, description: str, **extra: int) -> WithJsonSchema:
    """A plain schema for an optional argument (no ``anyOf`` null: fewer prompt tokens)."""
    return WithJsonSchema({"type": kind, "description": description, **extra})


class PositionArgs(_Args):
    path: Annotated[str | None, _optional("string", "File (with symbol: narrows it).")] = None
    line: Annotated[int | None, Field(ge=1), _optional("integer", "1-based line.", minimum=1)] = (
        None
    )
    column: Annotated[
        int | None, Field(ge=1), _optional("integer", "1-based column (characters).", minimum=1)
    ] = None
    symbol: Annotated[
        str | None,
        _optional("string", "A name (or Class.method) instead of line/column."),
    ] = None

    @model_validator(mode="after")
    def _position_or_symbol(self) -> Self:
        if self.symbol is None and (self.path is None or self.line is None or self.column is None):
            raise ValueError("give path, line and column, or symbol")
        return self


class DefinitionArgs(PositionArgs):
    pass


class ReferencesArgs(PositionArgs):
    pass


class HoverArgs(PositionArgs):
    pass


class RenameArgs(PositionArgs):
    new_name: str = Field(min_length=1)


class SymbolsArgs(_Args):
    query: Annotated[str | None, _optional("string", "Search the workspace's symbols.")] = None
    path: Annotated[str | None, _optional("string", "Or outline this file.")] = None

    @model_validator(mode="after")
    def _query_or_path(self) -> Self:
        if not self.query and not self.path:
            raise ValueError("give query or path")
        return self


SemanticArgs = DefinitionArgs | ReferencesArgs | HoverArgs | RenameArgs | SymbolsArgs

#: name → (arguments, description) of each semantic tool.
SEMANTIC_TOOLS: dict[str, tuple[type[_Args], str]] = {
    "definition": (
        DefinitionArgs,
        "Where a symbol is defined (language server).",
    ),
    "references": (
        ReferencesArgs,
        "Every reference to a symbol, declaration included (language server).",
    ),
    "hover": (HoverArgs, "A symbol's type, signature and docstring (language server)."),
    "symbols": (
        SymbolsArgs,
        "Workspace symbols matching query, or a file's outline.",
    ),
    "rename": (
        RenameArgs,
        "Rename a symbol everywhere (the language server's edit).",
    ),
}


async def call_semantic(tools: SemanticTools, args: _Args) -> SemanticResult:
    """Run one semantic tool call (its errors are :class:`LanguageServerError`)."""
    match args:
        case RenameArgs():
            return await tools.rename(args.path, args.line, args.column, args.symbol, args.new_name)
        case DefinitionArgs():
            return await tools.definition(args.path, args.line, args.column, args.symbol)
        case ReferencesArgs():
            return await tools.references(args.path, args.line, args.column, args.symbol)
        case HoverArgs():
            return await tools.hover(args.path, args.line, args.column, args.symbol)
        case SymbolsArgs():
            return await tools.symbols(args.query, args.path)
    raise TypeError(f"not a semantic tool's arguments: {type(args).__name__}")

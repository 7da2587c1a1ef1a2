"""The semantic tools' arguments (what the model sees) and their dispatch."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from driveros.semantic._semantic import SemanticResult, SemanticTools


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PositionArgs(_Args):
    path: str | None = Field(
        default=None, description="Workspace-relative file (with symbol: narrows the search)."
    )
    line: int | None = Field(default=None, ge=1, description="1-based line, as read_file shows.")
    column: int | None = Field(default=None, ge=1, description="1-based column (characters).")
    symbol: str | None = Field(
        default=None,
        description="A name (or Class.method) instead of path/line/column; an ambiguous name "
        "answers with the candidates.",
    )

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
    new_name: str = Field(min_length=1, description="The new name.")


class SymbolsArgs(_Args):
    query: str | None = Field(default=None, description="Search the workspace's symbols.")
    path: str | None = Field(default=None, description="Outline this file's symbols instead.")

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
        "Where the symbol at a position (or named by symbol) is defined, by the language server.",
    ),
    "references": (
        ReferencesArgs,
        "Every reference to a symbol (declaration included), by the language server.",
    ),
    "hover": (HoverArgs, "A symbol's type, signature and docstring, by the language server."),
    "symbols": (
        SymbolsArgs,
        "Workspace symbols matching query, or the outline of the file at path.",
    ),
    "rename": (
        RenameArgs,
        "Rename a symbol everywhere with the language server's own edit (reviewed like any edit).",
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

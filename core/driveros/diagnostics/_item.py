"""The diagnostic item and the snapshot: what the project's own tools said at one moment."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from driveros._unicode import printable_data

Severity = Literal["error", "warning", "information", "hint"]


class DiagnosticItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    line: int = 0
    column: int = 0
    end_line: int | None = None
    end_column: int | None = None
    severity: Severity = "error"
    code: str | None = None
    source: str = ""
    message: str

    @model_validator(mode="before")
    @classmethod
    def _printable(cls, data: Any) -> Any:
        # Strings always encode as UTF-8: lone surrogates become visible escapes.
        return printable_data(data) if isinstance(data, dict) else data


class DiagnosticsSnapshot(BaseModel):
    """What the project's own tools said at one moment."""

    model_config = ConfigDict(frozen=True)

    fingerprint: str
    items: tuple[DiagnosticItem, ...] = ()
    #: Names of the checks that ran (e.g. "ruff", "mypy", "pytest").
    checks: tuple[str, ...] = ()
    #: Tool output that could not be parsed into items: kept, never dropped.
    raw: str = ""

    @property
    def errors(self) -> int:
        return sum(1 for d in self.items if d.severity == "error")

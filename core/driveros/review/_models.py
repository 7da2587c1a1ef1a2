"""Value types of the review layer: proposed file changes, conflicts, what was applied."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ChangeAction = Literal["create", "modify", "delete", "rename"]


class FileChange(BaseModel):
    """One file the agent changed, relative to the baseline taken when the scratch copy started.

    ``path`` and ``old_path`` are workspace-relative POSIX paths. ``before``/``after`` hold the
    text (``None`` for a side that does not exist, and for binary or oversized files).
    ``diff`` is a unified diff with ``a/`` and ``b/`` headers (a one-line note for binaries).
    ``before_sha``/``after_sha`` are git blob ids of the two sides (``None`` when absent).
    """

    model_config = ConfigDict(frozen=True)

    path: str
    action: ChangeAction
    old_path: str | None = None
    before: str | None = None
    after: str | None = None
    binary: bool = False
    diff: str = ""
    before_sha: str | None = None
    after_sha: str | None = None
    #: Git file mode of the new side ("100644", "100755", "120000"), None for deletions.
    mode: str | None = None
    additions: int = 0
    deletions: int = 0

    @property
    def paths(self) -> tuple[str, ...]:
        """Every workspace path this change touches (both sides of a rename)."""
        return (self.path,) if self.old_path is None else (self.old_path, self.path)


class Conflict(BaseModel):
    """A file the user changed since the baseline, so the agent's version was not written."""

    model_config = ConfigDict(frozen=True)

    path: str
    reason: str


class ApplyResult(BaseModel):
    """What a successful ``apply()``/``commit()`` wrote to the user's workspace."""

    model_config = ConfigDict(frozen=True)

    applied: list[str] = Field(default_factory=list)
    #: The commit id for ``commit()``; None for ``apply()``.
    commit: str | None = None

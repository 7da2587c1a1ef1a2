"""Value types of the review layer: proposed file changes and the review bookkeeping."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ChangeAction = Literal["create", "modify", "delete", "rename"]
FileStatus = Literal["pending", "accepted", "rejected", "applied"]


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


class FileReview(BaseModel):
    """The review status of one proposed file."""

    model_config = ConfigDict(frozen=True)

    path: str
    action: ChangeAction
    old_path: str | None = None
    status: FileStatus = "pending"
    feedback: str = ""
    additions: int = 0
    deletions: int = 0


class ReviewState(BaseModel):
    """Per-file review bookkeeping that the CLI and the language server can show."""

    model_config = ConfigDict(frozen=True)

    files: list[FileReview] = Field(default_factory=list)
    closed: bool = False

    def with_status(self, status: FileStatus) -> list[str]:
        return [f.path for f in self.files if f.status == status]

    @property
    def pending(self) -> list[str]:
        return self.with_status("pending")

    @property
    def accepted(self) -> list[str]:
        return self.with_status("accepted")

    @property
    def rejected(self) -> list[str]:
        return self.with_status("rejected")

    @property
    def applied(self) -> list[str]:
        return self.with_status("applied")

    def feedback_prompt(self) -> str:
        """A user turn telling the model which files were rejected and why ("" if none)."""
        rejected = [f for f in self.files if f.status == "rejected"]
        if not rejected:
            return ""
        lines = ["The user reviewed your proposal and rejected these changes:"]
        for f in rejected:
            note = f": {f.feedback}" if f.feedback else ""
            lines.append(f"- {f.path} ({f.action}){note}")
        accepted = [f.path for f in self.files if f.status in ("accepted", "applied")]
        if accepted:
            lines.append("Accepted (keep as they are): " + ", ".join(accepted))
        lines.append("Revise the rejected changes accordingly.")
        return "\n".join(lines)

"""The shapes of driveros' custom messages (pydantic, camelCase on the wire), beside the
names in :mod:`driveros_lsp.protocol` and documented in docs/protocol.md.

Kept out of ``protocol.py`` so that importing the names (every client test, the server's
``initialize`` path) never imports pydantic. ``PROPOSAL_FILE_FIELDS`` in ``protocol.py`` lists
the wire names of :class:`ProposalFile`; a test keeps the two, the TypeScript interface, the
Lua table and the docs table equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = ["ProposalFile", "ProposalParams", "proposal_file"]


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    def wire(self) -> dict[str, Any]:
        """The JSON object sent to the client."""
        return self.model_dump(by_alias=True, mode="json")


class ProposalFile(_Wire):
    """One file of a ``driveros/proposal`` notification: everything a client needs for a
    side-by-side diff (the current file on one side, ``newText`` on the other)."""

    path: str = Field(description="Workspace-relative POSIX path (the new path of a rename).")
    uri: str = Field(description="The file's URI in the workspace (the new path of a rename).")
    action: Literal["create", "modify", "delete", "rename"]
    old_path: str | None = Field(
        default=None, description="A rename's source, workspace-relative; null otherwise."
    )
    diff: str = Field(default="", description="Unified diff of the change.")
    new_text: str | None = Field(
        default=None,
        description="The file's whole proposed content; null for a delete, a binary file or "
        "a file too large to propose as text.",
    )
    binary: bool = Field(default=False, description="A binary file (no text, no diff).")
    conflict: bool = Field(
        default=False, description="Left out of the last edit: edited in the editor meanwhile."
    )


class ProposalParams(_Wire):
    """Params of ``driveros/proposal``: the files of a run still pending review."""

    run_id: str
    state: str
    rationale: str = ""
    council: dict[str, Any] | None = None
    files: list[ProposalFile] = Field(default_factory=list)


def proposal_file(change: Any, *, root: Path, conflicts: Iterable[str]) -> ProposalFile:
    """The wire form of one scratch-copy change (``driveros.review.FileChange``-like)."""
    rel = str(change.path)
    action = str(change.action)
    binary = bool(getattr(change, "binary", False))
    after = getattr(change, "after", None)
    return ProposalFile(
        path=rel,
        uri=(root / rel).as_uri(),
        action=action,  # validated by pydantic
        old_path=None if change.old_path is None else str(change.old_path),
        diff=change.diff or "",
        new_text=None if action == "delete" or binary or not isinstance(after, str) else after,
        binary=binary,
        conflict=rel in set(conflicts),
    )

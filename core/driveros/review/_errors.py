"""Errors of the review layer (all under :class:`driveros.DriverosError`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from driveros._errors import DriverosError

if TYPE_CHECKING:
    from driveros.review._models import Conflict


class ReviewError(DriverosError):
    """Base of every review-layer failure: scratch copies, diffs, review actions."""


class NotARepositoryError(ReviewError):
    """A git-only action (``commit``) was asked for a workspace that is not a git repository."""


class HookChangeError(ReviewError):
    """``commit`` refused: the selected changes touch a git hook or git configuration (a
    ``core.hooksPath`` directory, ``.husky/``, ``.pre-commit-config.yaml``, ...), which git
    would run as the user. Nothing was written; ``paths`` lists the files to review by hand."""

    def __init__(self, message: str, *, paths: list[str], **context: object) -> None:
        super().__init__(message, paths=list(paths), **context)
        self.paths = list(paths)


class ScratchClosedError(ReviewError):
    """The scratch workspace was used after ``aclose()`` or ``discard()``."""


class UnknownPathError(ReviewError):
    """A review action named a path that is not among the proposed changes."""


class ConflictError(ReviewError):
    """The user changed files since the baseline; nothing was written.

    ``conflicts`` lists each conflicting file with the reason; ``clean`` lists the selected
    paths that would have applied, so a caller can retry with just those.
    """

    def __init__(
        self,
        message: str,
        *,
        conflicts: list[Conflict],
        clean: list[str],
        **context: Any,
    ) -> None:
        super().__init__(
            message, conflicts=[c.path for c in conflicts], clean=list(clean), **context
        )
        self.conflicts = conflicts
        self.clean = clean

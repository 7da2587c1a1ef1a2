"""The review layer: scratch copies of a workspace, their diffs and review actions.

    async with await ScratchWorkspace.create(workspace, overlays=buffers) as scratch:
        ...  # the agent works in scratch.path
        changes = await scratch.changes()
        sys.stderr.write(render_changes(changes, color=sys.stderr.isatty()))
        await scratch.apply()          # or commit(message), discard()

Approval policies (which tool calls may run at all) live in :mod:`driveros.approval`.
"""

from driveros._errors import GitError, GitNotFoundError
from driveros.review._checkpoints import CheckpointRecord, Checkpoints, checkpoints_of
from driveros.review._diff import combined_patch, render_changes, unified_diff
from driveros.review._environments import ENVIRONMENT_DIRS
from driveros.review._errors import (
    ConflictError,
    HookChangeError,
    NotARepositoryError,
    ReviewError,
    ScratchClosedError,
    UnknownPathError,
)
from driveros.review._folders import (
    FolderViews,
    apply_checkpoints,
    apply_together,
    commit_together,
)
from driveros.review._kept import KeptScratch
from driveros.review._merge import rebase_text
from driveros.review._models import (
    ApplyResult,
    ChangeAction,
    Conflict,
    FileChange,
)
from driveros.review._overlay import (
    STRATEGIES,
    STRATEGY_VAR,
    overlay_refusal,
    scratch_strategies,
)
from driveros.review._plan import PlannedFile, path_problem, plan_file, read_text
from driveros.review._reopen import reopen_kept_where
from driveros.review._scratch import ContainerGit, ScratchWorkspace
from driveros.review._user_repo import DEFAULT_EXCLUDES

__all__ = [
    "DEFAULT_EXCLUDES",
    "ENVIRONMENT_DIRS",
    "STRATEGIES",
    "STRATEGY_VAR",
    "ApplyResult",
    "ChangeAction",
    "CheckpointRecord",
    "Checkpoints",
    "Conflict",
    "ConflictError",
    "ContainerGit",
    "FileChange",
    "FolderViews",
    "GitError",
    "GitNotFoundError",
    "HookChangeError",
    "KeptScratch",
    "NotARepositoryError",
    "PlannedFile",
    "ReviewError",
    "ScratchClosedError",
    "ScratchWorkspace",
    "UnknownPathError",
    "apply_checkpoints",
    "apply_together",
    "checkpoints_of",
    "combined_patch",
    "commit_together",
    "overlay_refusal",
    "path_problem",
    "plan_file",
    "read_text",
    "rebase_text",
    "render_changes",
    "reopen_kept_where",
    "scratch_strategies",
    "unified_diff",
]

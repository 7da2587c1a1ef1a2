"""Where one scratch copy lives (:class:`Layout`), and its record in the lease that lets another
process reopen it (:func:`layout_to_json`, :func:`layout_from_json`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driveros._git import GitRepo
from driveros.review._environments import ENVIRONMENT_DIRS
from driveros.review._errors import ReviewError
from driveros.review._files import check_relpath
from driveros.review._indexed import IndexedFiles
from driveros.review._overlay import VIEW_STRATEGIES
from driveros.state import Lease


@dataclass
class Layout:
    """Where everything of one scratch copy lives."""

    workspace: Path  #: the user's workspace (resolved)
    root: Path  #: the temporary directory holding the copy and the state
    work: Path  #: root of the copy (the worktree root for a repository)
    prefix: str  #: the workspace's path inside ``work`` ("" or "sub/dir/")
    git_dir: Path  #: the private bare repository
    #: The user's repository top level when the copy is a worktree, else None.
    repo_top: Path | None = None
    #: The user's common git directory when the copy is a worktree, else None.
    git_common: Path | None = None
    baseline: str = ""  #: tree id of the baseline
    #: For overlaid paths: the blob id of the user's file on disk at start (None if absent).
    disk_baseline: dict[str, str | None] = field(default_factory=dict)
    #: The worktree's own git directory (``<git_common>/worktrees/<name>``), else None.
    worktree_git: Path | None = None
    #: Environment directories linked into the copy (names at the workspace root).
    environments: list[str] = field(default_factory=list)
    #: The registration of ``root`` (and the worktree entry) in the state directory.
    lease: Lease | None = None
    #: Untracked files over the size limit, not copied (paths relative to ``work``).
    left_out: list[str] = field(default_factory=list)
    #: How the copy was made: ``worktree``, ``copy``, ``overlay`` or ``fuse-overlay``.
    strategy: str = ""
    #: Why a requested or preferred overlay was not used ("" when it was, or not wanted).
    fallback_reason: str = ""
    #: For an overlay: the lower layer (the user's repository top or workspace), else None.
    lower: Path | None = None
    #: For an overlay: what the view hides with a whiteout made before mounting (relative to
    #: ``work``): ignored files and directories, secret files of a plain directory, ``.git``.
    hidden: list[str] = field(default_factory=list)
    #: For an overlay that hides something: the hide layer holding those whiteouts (a lower
    #: layer above ``lower``, on a tmpfs when one is usable, else ``root / "hide"``), else None.
    hide_layer: Path | None = None
    #: For a view: files the private index is known to hold (relative to ``work``), so
    #: staging asks git about ignore rules only for the others (a tracked file is never
    #: ignored). Never more than the index holds; None: not read yet, or reset by a write
    #: that did not keep it (:func:`driveros.review._stage.add_paths`).
    tracked: IndexedFiles | None = field(default=None, repr=False, compare=False)
    #: For a view: the paths its staging has recorded (relative to ``work``), named again
    #: the next time: one the run made and then removed is gone from the upper layer too.
    staged: set[str] = field(default_factory=set, repr=False, compare=False)

    @property
    def upper(self) -> Path:
        return self.root / "upper"

    @property
    def overlay_work(self) -> Path:
        return self.root / "overlay-work"

    @property
    def path(self) -> Path:
        return self.work / self.prefix if self.prefix else self.work

    @property
    def pathspec(self) -> list[str]:
        return ["--", self.prefix.rstrip("/")] if self.prefix else []

    @property
    def private_repo(self) -> GitRepo:
        """The private repository with the copy (``work``) as its work tree."""
        return self.private_repo_at(self.work)

    @property
    def private_store(self) -> GitRepo:
        """The private repository alone, for its objects and refs (no work tree)."""
        return GitRepo(git_dir=self.git_dir, scratch=True)

    def private_repo_at(self, work_tree: Path) -> GitRepo:
        """The private repository with ``work_tree`` (the copy, or a tree beside it)."""
        return GitRepo(git_dir=self.git_dir, work_tree=work_tree, scratch=True)


def layout_to_json(lay: Layout) -> dict[str, Any]:
    """What :func:`layout_from_json` needs to reopen the copy in another process."""
    return {
        "workspace": str(lay.workspace),
        "root": str(lay.root),
        "work": str(lay.work),
        "prefix": lay.prefix,
        "git_dir": str(lay.git_dir),
        "repo_top": str(lay.repo_top) if lay.repo_top else None,
        "git_common": str(lay.git_common) if lay.git_common else None,
        "baseline": lay.baseline,
        "disk_baseline": dict(lay.disk_baseline),
        "worktree_git": str(lay.worktree_git) if lay.worktree_git else None,
        "environments": list(lay.environments),
        "strategy": lay.strategy,
        "lower": str(lay.lower) if lay.lower else None,
        "hidden": list(lay.hidden),
        "hide_layer": str(lay.hide_layer) if lay.hide_layer else None,
    }


def layout_from_json(data: Any, lease: Lease) -> Layout | None:
    """The layout saved by :func:`layout_to_json`, or None when it does not hold together
    (it is read back from disk: every path must lie in the lease's own scratch root, and a
    hide layer outside it must be a path the lease registered)."""
    if not isinstance(data, dict) or not lease.record.paths:
        return None
    try:
        root = Path(lease.record.paths[0])
        work, git_dir = Path(data["work"]), Path(data["git_dir"])
        if Path(data["root"]) != root or root not in work.parents or root not in git_dir.parents:
            return None
        opt = {k: Path(data[k]) if data.get(k) else None for k in ("repo_top", "git_common")}
        wt = data.get("worktree_git")
        disk = data.get("disk_baseline") or {}
        envs = data.get("environments") or []
        hidden = data.get("hidden") or []
        hide = Path(data["hide_layer"]) if data.get("hide_layer") else None
        if hide is not None and hide != root / "hide" and str(hide) not in lease.record.paths[1:]:
            return None
        lay = Layout(
            workspace=Path(data["workspace"]),
            root=root,
            work=work,
            prefix=str(data.get("prefix") or ""),
            git_dir=git_dir,
            repo_top=opt["repo_top"],
            git_common=opt["git_common"],
            baseline=str(data["baseline"]),
            disk_baseline={
                check_relpath(str(k)): v if isinstance(v, str) else None for k, v in disk.items()
            },
            worktree_git=Path(wt) if wt else None,
            environments=[str(e) for e in envs if str(e) in ENVIRONMENT_DIRS],
            lease=lease,
            strategy=str(data.get("strategy") or ""),
            lower=Path(data["lower"]) if data.get("lower") else None,
            hidden=[str(h) for h in hidden] if isinstance(hidden, list) else [],
            hide_layer=hide,
        )
        if lay.strategy in VIEW_STRATEGIES and lay.lower is None:
            return None
    except (KeyError, TypeError, ValueError, ReviewError):
        return None
    if lay.prefix:
        try:
            check_relpath(lay.prefix.rstrip("/"))
        except ReviewError:
            return None
    return lay

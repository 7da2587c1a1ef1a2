"""Which proposed changes would run as the user on ``git commit``: hooks and git config.

``commit`` is the one review action where git itself executes files of the repository: the
hooks (``.git/hooks``, a ``core.hooksPath`` such as ``.husky``, the configs of pre-commit,
lefthook, husky, simple-git-hooks, lint-staged and commitlint) and any config file the user's
git configuration includes from the workspace. A proposal that changes one of them is never
committed by driveros: the user reviews that file by hand (docs/review.md, docs/security.md).
"""

from __future__ import annotations

import asyncio
import os
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from driveros._git import run_git
from driveros.review._errors import HookChangeError
from driveros.review._models import FileChange

#: Directories of hook managers (any depth; case-folded as a case-insensitive disk would).
HOOK_DIRS: frozenset[str] = frozenset(
    {".git", ".husky", ".githooks", ".lefthook", ".lefthook-local"}
)
#: Config files of hook managers, and of the tools their hooks run.
_HOOK_FILE = re.compile(
    r"""^(
        \.pre-commit-(config|hooks)\.ya?ml
      | \.?lefthook(-local)?\.(ya?ml|json|jsonc|toml)
      | \.huskyrc(\.(json|js|cjs|mjs|ya?ml))?
      | husky\.config\.(js|cjs|mjs)
      | \.?simple-git-hooks\.(json|js|cjs|mjs)
      | \.overcommit\.ya?ml
      | \.lintstagedrc(\.(json|js|cjs|mjs|ya?ml))?
      | lint-staged\.config\.(js|cjs|mjs|ts)
      | \.commitlintrc(\.(json|js|cjs|mjs|ts|ya?ml))?
      | commitlint\.config\.(js|cjs|mjs|ts)
    )$""",
    re.VERBOSE,
)
#: package.json keys through which hook managers run commands.
_PACKAGE_HOOKS = re.compile(
    r'"(husky|simple-git-hooks|lint-staged|pre-commit|commitlint|ghooks|gitHooks|yorkie)"'
)


def _fold(part: str) -> str:
    """A path component as a case-insensitive, HFS+-style file system would compare it."""
    visible = "".join(ch for ch in part if unicodedata.category(ch) != "Cf")
    return visible.rstrip(". ").casefold()


def static_hook_reason(change: FileChange, path: str) -> str | None:
    """Why ``path`` (one side of ``change``) is a hook path by name or content, else None."""
    parts = [_fold(p) for p in PurePosixPath(path).parts]
    for part in parts:
        if part in HOOK_DIRS:
            return f"{part}/ holds git hooks or git's own configuration"
    name = parts[-1] if parts else ""
    if _HOOK_FILE.match(name):
        return "a git hook manager's configuration"
    if name == "package.json":
        texts = [t for t in (change.before, change.after) if t is not None]
        if change.binary or not texts or any(_PACKAGE_HOOKS.search(t) for t in texts):
            return "package.json configures git hooks (husky, lint-staged, ...)"
    return None


async def _repo_top(workspace: Path) -> Path:
    _, out, _ = await run_git(["rev-parse", "--show-toplevel"], cwd=workspace)
    return Path(out.decode("utf-8", "surrogateescape").strip())


async def _hooks_dirs(workspace: Path) -> tuple[Path, Path]:
    """The directory git runs hooks from (``core.hooksPath`` honoured): as configured
    (normalized, symlinks kept) and resolved."""
    _, out, _ = await run_git(["rev-parse", "--git-path", "hooks"], cwd=workspace, hooks="user")
    hooks = Path(out.decode("utf-8", "surrogateescape").strip())
    hooks = hooks if hooks.is_absolute() else workspace / hooks
    return await asyncio.to_thread(lambda: (Path(os.path.normpath(hooks)), hooks.resolve()))


async def _config_files(workspace: Path) -> list[Path]:
    """Every file git reads configuration from for this repository, and every file an
    ``include.path``/``includeIf.*.path`` names (existing or not), resolved."""
    top = await _repo_top(workspace)
    _, out, _ = await run_git(["config", "-z", "--show-origin", "--list"], cwd=top, check=False)
    files: list[Path] = []
    included: list[tuple[Path, str]] = []
    items = out.decode("utf-8", "surrogateescape").split("\0")
    for origin, entry in zip(items[::2], items[1::2], strict=False):
        if not origin.startswith("file:"):
            continue
        source = Path(origin[5:])
        source = source if source.is_absolute() else top / source
        files.append(source)
        key, _, value = entry.partition("\n")
        key = key.lower()
        if key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")):
            included.append((source.parent, value))

    def resolve() -> list[Path]:
        targets = [base / Path(value).expanduser() for base, value in included]
        return [f.resolve() for f in files + targets]

    return await asyncio.to_thread(resolve)


async def hook_changes(workspace: Path, changes: Iterable[FileChange]) -> list[tuple[str, str]]:
    """``(path, why)`` for every side of ``changes`` that git would run or read as
    configuration on a commit in ``workspace``; empty when committing is safe."""
    hooks_as_set, hooks = await _hooks_dirs(workspace)
    configs = set(await _config_files(workspace))
    ws = await asyncio.to_thread(workspace.resolve)

    def where(path: str) -> Path:
        target = ws / path
        return target.parent.resolve() / target.name

    def runs_hooks(path: str, real: Path) -> bool:
        """Inside the hooks directory, or on the way to it (a symlink the change repoints)."""
        for place in (Path(os.path.normpath(workspace / path)), real):
            for dirs in (hooks_as_set, hooks):
                if place == dirs or place.is_relative_to(dirs) or dirs.is_relative_to(place):
                    return True
        return False

    found: list[tuple[str, str]] = []
    for change in changes:
        for path in change.paths:
            why = static_hook_reason(change, path)
            if why is None:
                real = await asyncio.to_thread(where, path)
                if runs_hooks(path, real):
                    why = f"git runs hooks from {hooks} (core.hooksPath)"
                elif real in configs:
                    why = "your git configuration includes this file"
            if why is not None and (path, why) not in found:
                found.append((path, why))
    return found


async def refuse_hook_changes(workspace: Path, changes: Iterable[FileChange]) -> None:
    """Raise :class:`HookChangeError` (nothing written) when ``changes`` touch a hook path."""
    found = await hook_changes(workspace, changes)
    if not found:
        return
    listed = "; ".join(f"{p} ({why})" for p, why in found)
    raise HookChangeError(
        "driveros does not commit changes that git would run as you: "
        f"{listed}. Review {'this file' if len(found) == 1 else 'these files'} by hand: "
        "apply the changes without committing (--review-action keep, or accept in the "
        "editor), read them, then commit yourself",
        paths=[p for p, _ in found],
    )

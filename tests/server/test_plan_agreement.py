"""One review planner, two renderings: the CLI's ``apply`` and the language server's
``WorkspaceEdit`` decide every file alike (written, or a conflict kept in the proposal).

Each case is a real scratch copy, an agent's change in it and what the user did meanwhile in
the workspace; the edit is planned first (it only reads), then the CLI applies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from driveros.review import ConflictError, ScratchWorkspace, rebase_text
from driveros_lsp._edits import plan_edit

Edit = Callable[[Path], None]

OLD = "".join(f"old {n}\n" for n in range(1, 9))


def _write(rel: str, text: str) -> Edit:
    def edit(root: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)

    return edit


def _unlink(rel: str) -> Edit:
    return lambda root: (root / rel).unlink()


def _rename(old: str, new: str) -> Edit:
    return lambda root: (root / old).rename(root / new)


def _link_dir(rel: str) -> Edit:
    def edit(root: Path) -> None:
        (root.parent / "elsewhere").mkdir(exist_ok=True)
        (root / rel).symlink_to(root.parent / "elsewhere")

    return edit


def _nothing(root: Path) -> None:
    pass


@dataclass(frozen=True)
class Case:
    name: str
    agent: Edit
    user: Edit
    #: The proposal's path for this change (the new side of a rename).
    path: str
    written: bool
    #: Only the language server re-applies the agent's change on the user's newer text (the
    #: planner's ``rebase``, which the CLI does not pass): the one intended difference.
    rebased: bool = False


CASES = [
    Case("modify", _write("a.txt", "agent\n"), _nothing, "a.txt", True),
    Case(
        "modify, user did the same",
        _write("a.txt", "agent\n"),
        _write("a.txt", "agent\n"),
        "a.txt",
        True,
    ),
    Case(
        "modify, user changed it",
        _write("a.txt", "agent\n"),
        _write("a.txt", "mine\n"),
        "a.txt",
        False,
    ),
    Case("modify, user deleted it", _write("a.txt", "agent\n"), _unlink("a.txt"), "a.txt", False),
    Case("create", _write("new.txt", "agent\n"), _nothing, "new.txt", True),
    Case(
        "create, user did the same",
        _write("new.txt", "agent\n"),
        _write("new.txt", "agent\n"),
        "new.txt",
        True,
    ),
    Case(
        "create, user created another",
        _write("new.txt", "agent\n"),
        _write("new.txt", "mine\n"),
        "new.txt",
        False,
    ),
    Case(
        "create under a symlinked directory",
        _write("sub/new.txt", "agent\n"),
        _link_dir("sub"),
        "sub/new.txt",
        False,
    ),
    Case("delete", _unlink("a.txt"), _nothing, "a.txt", True),
    Case("delete, user deleted it too", _unlink("a.txt"), _unlink("a.txt"), "a.txt", True),
    Case("delete, user changed it", _unlink("a.txt"), _write("a.txt", "mine\n"), "a.txt", False),
    Case("rename", _rename("old.txt", "moved.txt"), _nothing, "moved.txt", True),
    # The CLI wrote moved.txt back from the agent's copy: the user's deletion was undone.
    Case(
        "rename, user deleted the old file",
        _rename("old.txt", "moved.txt"),
        _unlink("old.txt"),
        "moved.txt",
        False,
    ),
    # The language server called it a conflict ("old.txt no longer exists").
    Case(
        "rename, user did the same",
        _rename("old.txt", "moved.txt"),
        _rename("old.txt", "moved.txt"),
        "moved.txt",
        True,
    ),
    # The CLI deleted the user's old.txt next to the copy the user had made.
    Case(
        "rename, user made the target too",
        _rename("old.txt", "moved.txt"),
        _write("moved.txt", OLD),
        "moved.txt",
        False,
    ),
    Case(
        "rename, user created another target",
        _rename("old.txt", "moved.txt"),
        _write("moved.txt", "mine\n"),
        "moved.txt",
        False,
    ),
    Case(
        "modify, user changed another line",
        _write("old.txt", "agent\n" + OLD[6:]),
        _write("old.txt", OLD[:-6] + "mine\n"),
        "old.txt",
        False,
        rebased=True,
    ),
    Case(
        "rename, user changed the old file",
        _rename("old.txt", "moved.txt"),
        _write("old.txt", "mine\n"),
        "moved.txt",
        False,
        rebased=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_cli_apply_and_lsp_edit_decide_alike(tmp_path: Path, case: Case) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("base\n")
    (ws / "old.txt").write_text(OLD)
    async with await ScratchWorkspace.create(ws, base_dir=tmp_path) as scratch:
        case.agent(scratch.path)
        changes = await scratch.changes()
        assert case.path in [c.path for c in changes]
        case.user(ws)
        plan = plan_edit(
            changes,
            root=ws,
            paths=[case.path],
            documents={},
            encoding="utf-16",
            annotate=False,
            rationale="",
            rebase=rebase_text,
        )
        lsp_writes = case.written or case.rebased
        assert (case.path in plan.included) is lsp_writes, plan.conflicts
        assert (case.path in plan.conflicts) is not lsp_writes
        try:
            applied = (await scratch.apply([case.path])).applied
        except ConflictError as err:
            assert not case.written, err.conflicts
            assert err.conflicts
        else:
            assert case.written, f"the CLI applied {applied}"

"""The language server's rendering of the review plan: a ``WorkspaceEdit`` that never
clobbers the user's work.

For every selected change the review planner (``driveros.review.plan_file``, the rule the
CLI's apply renders too) compares the *current* text (the open buffer, else the file on disk)
with the change's ``before`` side (what the run started from). Equal: the edit goes from
``before`` to ``after``. Already the agent's version: nothing to send (the file counts as
applied). Different: the agent's change is rebased onto the current text
(``rebase(base=before, theirs=current, ours=after)``); when that fails the file is a conflict,
left out of the edit and kept in the proposal. A path under a symbolic link, a directory in
the way, or a symbolic link itself is a conflict too: the edit never writes through a link.

The edit uses ``documentChanges``: a versioned ``TextDocumentEdit`` for open documents (a
``null`` version for the others) and ``CreateFile``/``RenameFile``/``DeleteFile``. With
``annotate`` every change carries the annotation of its file (label, ``needsConfirmation``,
the run's rationale) and the annotation map holds exactly the ids that are used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from driveros_lsp._text import Encoding, Hunk, line_hunks

DocumentChange = lsp.TextDocumentEdit | lsp.CreateFile | lsp.RenameFile | lsp.DeleteFile
"""One entry of a ``WorkspaceEdit``'s ``documentChanges``."""

Rebase = Callable[[str, str, str], str | None]
"""``rebase(base, theirs, ours)``: ``ours``' change re-applied on ``theirs``, or None."""


@dataclass(frozen=True)
class OpenDocument:
    uri: str
    version: int
    text: str


@dataclass
class EditPlan:
    """The outcome of :func:`plan_edit`."""

    edit: lsp.WorkspaceEdit | None
    #: Paths whose change is in the edit.
    included: list[str] = field(default_factory=list)
    #: path -> why it was left out.
    conflicts: dict[str, str] = field(default_factory=dict)
    #: Included paths whose file is not open in the editor (``version: null`` in the edit),
    #: with the planner's decision: their disk content is checked around the edit.
    closed: dict[str, Any] = field(default_factory=dict)
    #: Paths asked for whose edit is already in flight (sent, not answered): not sent again.
    in_flight: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Roots:
    """A run's folders: its workspace (changes named by relative path) and the folders added
    to it (changes named by absolute path, inside one of them)."""

    workspace: Path
    added: tuple[Path, ...] = ()

    def folder_of(self, name: str) -> Path:
        """The folder of a change named ``name``; an absolute name outside every added
        folder stays the workspace's (the planner refuses it as leaving the workspace)."""
        path = Path(name)
        if path.is_absolute():
            for folder in self.added:
                if path.is_relative_to(folder) and path != folder:
                    return folder
        return self.workspace


def path_uri(root: Path, rel: str) -> str:
    return (root / rel).as_uri()


def _read(path: Path) -> str | None:
    from driveros.review import read_text

    return read_text(path)


def _text_edits(
    hunks: list[Hunk], annotation: str | None
) -> list[lsp.TextEdit | lsp.AnnotatedTextEdit]:
    out: list[lsp.TextEdit | lsp.AnnotatedTextEdit] = []
    for h in hunks:
        rng = lsp.Range(
            start=lsp.Position(line=h.start.line, character=h.start.character),
            end=lsp.Position(line=h.end.line, character=h.end.character),
        )
        if annotation is None:
            out.append(lsp.TextEdit(range=rng, new_text=h.new_text))
        else:
            out.append(
                lsp.AnnotatedTextEdit(range=rng, new_text=h.new_text, annotation_id=annotation)
            )
    return out


def plan_edit(
    changes: Sequence[Any],
    *,
    root: Path | Roots,
    paths: Sequence[str] | None,
    documents: dict[str, OpenDocument],
    encoding: Encoding,
    annotate: bool,
    rationale: str,
    rebase: Rebase,
) -> EditPlan:
    """Build the edit for ``changes`` (only ``paths`` when given). Blocking: reads files.

    Which change may be written and with what text is decided by the review planner of
    ``driveros.review`` (the same rule as the CLI's apply); this function only turns its
    decisions into LSP document changes. With :class:`Roots`, a change of an added folder
    (named by absolute path) is decided against that folder, by the same rule.
    """
    from driveros.review import plan_file

    roots = root if isinstance(root, Roots) else Roots(root)
    root = roots.workspace
    plan = EditPlan(edit=None)
    doc_changes: list[DocumentChange] = []
    annotations: dict[str, lsp.ChangeAnnotation] = {}
    wanted = set(paths) if paths is not None else None
    versions: dict[str, int | None] = {}

    def current_in(folder: Path) -> Callable[[str], str | None]:
        def current(local: str) -> str | None:
            rel = local if folder == root else str(folder / local)
            doc = documents.get(path_uri(root, rel))
            if doc is not None:
                versions[rel] = doc.version
                return doc.text
            versions[rel] = None
            return _read(root / rel)

        return current

    for change in changes:
        rel = str(change.path)
        if wanted is not None and rel not in wanted:
            continue
        folder = roots.folder_of(rel)
        if folder == root:
            decided = plan_file(root, change, current=current_in(root), rebase=rebase)
        else:
            decided = _qualified(
                folder,
                plan_file(
                    folder, _local(change, folder), current=current_in(folder), rebase=rebase
                ),
            )
        if decided.conflict is not None:
            plan.conflicts[rel] = decided.conflict
            continue
        if decided.done:  # the workspace already holds the agent's version
            plan.included.append(rel)
            continue
        ann = f"driveros:{rel}" if annotate else None
        if ann is not None:
            annotations[ann] = lsp.ChangeAnnotation(
                label=f"driveros: {change.action} {rel}",
                needs_confirmation=True,
                description=rationale or None,
            )
        uri = path_uri(root, rel)
        source = decided.source
        if versions.get(source) is None:  # not open: the edit carries no version to check
            plan.closed[rel] = decided
        action = decided.action
        now = decided.current
        assert not isinstance(now, bytes)  # the buffer or the disk's text
        if action == "create":
            doc_changes.append(
                lsp.CreateFile(
                    uri=uri,
                    options=lsp.CreateFileOptions(overwrite=False, ignore_if_exists=True),
                    annotation_id=ann,
                )
            )
            hunks = line_hunks("", decided.target or "", encoding)
            doc_changes.append(_doc_edit(uri, None, hunks, ann))
        elif action == "delete":
            doc_changes.append(
                lsp.DeleteFile(
                    uri=uri,
                    options=lsp.DeleteFileOptions(ignore_if_not_exists=True),
                    annotation_id=ann,
                )
            )
        else:
            assert now is not None and decided.target is not None
            hunks = line_hunks(now, decided.target, encoding)
            edit_uri = path_uri(root, source)
            if hunks:
                doc_changes.append(_doc_edit(edit_uri, versions.get(source), hunks, ann))
            if action == "rename":
                doc_changes.append(
                    lsp.RenameFile(
                        old_uri=edit_uri,
                        new_uri=uri,
                        options=lsp.RenameFileOptions(overwrite=False),
                        annotation_id=ann,
                    )
                )
        plan.included.append(rel)

    if doc_changes:
        used = {_annotation_id(dc) for dc in doc_changes} - {None}
        plan.edit = lsp.WorkspaceEdit(
            document_changes=doc_changes,
            change_annotations={k: v for k, v in annotations.items() if k in used} or None,
        )
    return plan


def _local(change: Any, folder: Path) -> Any:
    """``change`` (of an added folder, named by absolute path) named inside ``folder``."""
    update = {"path": str(Path(change.path).relative_to(folder))}
    if change.old_path:
        update["old_path"] = str(Path(change.old_path).relative_to(folder))
    return change.model_copy(update=update)


def _qualified(folder: Path, decided: Any) -> Any:
    """A decision made inside ``folder``, its paths named absolutely again."""
    return dataclasses.replace(
        decided,
        path=str(folder / decided.path),
        source=str(folder / decided.source),
        conflict_path=str(folder / decided.conflict_path) if decided.conflict_path else "",
    )


def closed_file_drift(root: Path, closed: dict[str, Any], *, after: bool) -> dict[str, str]:
    """Files that are not open in the editor and changed on disk behind the edit's back.

    Before the edit is sent (``after=False``) each must still hold the text the edit was
    computed on; once the client answered (``after=True``) it must hold that text (the client
    keeps the change in an unsaved buffer) or the edit's result. Returns path -> reason.
    Blocking: reads files.
    """
    from driveros.review import read_text

    drift: dict[str, str] = {}
    for rel, decided in closed.items():
        try:
            source_now = read_text(root / decided.source)
            target_now = read_text(root / rel) if decided.source != rel else source_now
        except (OSError, UnicodeDecodeError) as exc:
            drift[rel] = f"cannot read the file: {exc}"
            continue
        untouched = source_now == decided.current and (decided.source == rel or target_now is None)
        # A client may keep the new text in an unsaved buffer (VS Code does): then the disk
        # holds the file as the edit's file operations left it, with the old text.
        if decided.action == "delete":
            done = target_now is None
        elif decided.action == "create":
            done = target_now in (decided.target, "")
        elif decided.source != rel:
            done = source_now is None and target_now in (decided.target, decided.current)
        else:
            done = target_now == decided.target
        if after and not (untouched or done):
            drift[rel] = "changed on disk while the edit was in flight; check the file"
        elif not after and not untouched:
            drift[rel] = "changed on disk since the edit was planned"
    return drift


def _annotation_id(change: DocumentChange) -> str | None:
    if isinstance(change, lsp.TextDocumentEdit):
        ids = {
            e.annotation_id if isinstance(e, lsp.AnnotatedTextEdit) else None for e in change.edits
        }
        return next(iter(ids)) if len(ids) == 1 else None
    return change.annotation_id


def _doc_edit(
    uri: str, version: int | None, hunks: list[Hunk], ann: str | None
) -> lsp.TextDocumentEdit:
    return lsp.TextDocumentEdit(
        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
        edits=_text_edits(hunks, ann),
    )

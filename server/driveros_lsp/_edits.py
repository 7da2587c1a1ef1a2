"""A run's proposal as a ``WorkspaceEdit`` that never clobbers the user's work.

For every selected change the *current* text (the open buffer, else the file on disk) is
compared with the change's ``before`` side (what the run started from). Equal: the edit goes
from ``before`` to ``after``. Different: the agent's change is rebased onto the current text
(``rebase(base=before, theirs=current, ours=after)``); when that fails the file is a conflict,
left out of the edit and kept in the proposal.

The edit uses ``documentChanges``: a versioned ``TextDocumentEdit`` for open documents (a
``null`` version for the others) and ``CreateFile``/``RenameFile``/``DeleteFile``. With
``annotate`` every change carries the annotation of its file (label, ``needsConfirmation``,
the run's rationale) and the annotation map holds exactly the ids that are used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from driveros_lsp._text import Encoding, Hunk, line_hunks

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


def path_uri(root: Path, rel: str) -> str:
    return (root / rel).as_uri()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


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
    root: Path,
    paths: Sequence[str] | None,
    documents: dict[str, OpenDocument],
    encoding: Encoding,
    annotate: bool,
    rationale: str,
    rebase: Rebase,
    read: Callable[[Path], str | None] = _read,
) -> EditPlan:
    """Build the edit for ``changes`` (only ``paths`` when given). Blocking: reads files."""
    plan = EditPlan(edit=None)
    doc_changes: list[Any] = []
    annotations: dict[str, lsp.ChangeAnnotation] = {}
    wanted = set(paths) if paths is not None else None

    def current(rel: str) -> tuple[str | None, int | None]:
        uri = path_uri(root, rel)
        doc = documents.get(uri)
        if doc is not None:
            return doc.text, doc.version
        return read(root / rel), None

    for change in changes:
        rel = str(change.path)
        if wanted is not None and rel not in wanted:
            continue
        if change.binary:
            plan.conflicts[rel] = "binary files cannot be proposed as text edits"
            continue
        if str(change.action) in ("create", "modify") and change.after is None:
            plan.conflicts[rel] = "the file is too large to propose as a text edit"
            continue
        ann = f"driveros:{rel}" if annotate else None
        if ann is not None:
            annotations[ann] = lsp.ChangeAnnotation(
                label=f"driveros: {change.action} {rel}",
                needs_confirmation=True,
                description=rationale or None,
            )
        uri = path_uri(root, rel)
        action = str(change.action)
        if action == "create":
            now, _ = current(rel)
            if now is not None and now != change.after:
                plan.conflicts[rel] = "the file was created in the editor meanwhile"
                continue
            if now is None:
                doc_changes.append(
                    lsp.CreateFile(
                        uri=uri,
                        options=lsp.CreateFileOptions(overwrite=False, ignore_if_exists=True),
                        annotation_id=ann,
                    )
                )
                hunks = line_hunks("", change.after or "", encoding)
                doc_changes.append(_doc_edit(uri, None, hunks, ann))
            plan.included.append(rel)
            continue
        if action == "delete":
            now, _ = current(rel)
            if now is not None and now != change.before:
                plan.conflicts[rel] = "the file was edited since the run started"
                continue
            if now is not None:
                doc_changes.append(
                    lsp.DeleteFile(
                        uri=uri,
                        options=lsp.DeleteFileOptions(ignore_if_not_exists=True),
                        annotation_id=ann,
                    )
                )
            plan.included.append(rel)
            continue
        source_rel = str(change.old_path) if action == "rename" and change.old_path else rel
        now, version = current(source_rel)
        if now is None:
            plan.conflicts[rel] = f"{source_rel} no longer exists"
            continue
        before = change.before if change.before is not None else now
        after = change.after if change.after is not None else before
        target = after
        if now != before:
            merged = rebase(before, now, after)
            if merged is None:
                plan.conflicts[rel] = (
                    "the file was edited since the run started and the change no longer applies"
                )
                continue
            target = merged
        if action == "rename":
            if current(rel)[0] is not None:
                plan.conflicts[rel] = "the rename target already exists"
                continue
            source_uri = path_uri(root, source_rel)
            hunks = line_hunks(now, target, encoding)
            if hunks:
                doc_changes.append(_doc_edit(source_uri, version, hunks, ann))
            doc_changes.append(
                lsp.RenameFile(
                    old_uri=source_uri,
                    new_uri=uri,
                    options=lsp.RenameFileOptions(overwrite=False),
                    annotation_id=ann,
                )
            )
        else:
            hunks = line_hunks(now, target, encoding)
            if hunks:
                doc_changes.append(_doc_edit(uri, version, hunks, ann))
        plan.included.append(rel)

    if doc_changes:
        used = {_annotation_id(dc) for dc in doc_changes} - {None}
        plan.edit = lsp.WorkspaceEdit(
            document_changes=doc_changes,
            change_annotations={k: v for k, v in annotations.items() if k in used} or None,
        )
    return plan


def _annotation_id(change: Any) -> str | None:
    if isinstance(change, lsp.TextDocumentEdit):
        ids = {getattr(e, "annotation_id", None) for e in change.edits}
        return next(iter(ids)) if len(ids) == 1 else None
    return getattr(change, "annotation_id", None)


def _doc_edit(
    uri: str, version: int | None, hunks: list[Hunk], ann: str | None
) -> lsp.TextDocumentEdit:
    return lsp.TextDocumentEdit(
        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
        edits=_text_edits(hunks, ann),
    )

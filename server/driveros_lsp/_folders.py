"""Which workspace folders a task runs in (``driveros.agent.start``): docs/lsp-runs.md, "More
than one folder".

- ``folders: [uri, …]`` names them: each must be one of the client's ``workspaceFolders``;
  the first is the run's workspace, the others are added to the run as writable folders
  (``driveros.runs.AddedDir``, reviewed with the rest of the proposal);
- no ``folders`` but a ``uri``: the folder that holds that file;
- neither, in a workspace of more than one folder: the server asks the user which folder
  (``window/showMessageRequest``, one action per folder and "All folders") where the client
  can answer such a question, and otherwise refuses with ``RequestFailed`` naming the folders
  and the ``folders`` argument.

Trust stays per folder: the run's workspace is trusted or not on its own (``_trust.py``), and
an added folder is never configuration, whatever the trust of the first. An added folder
follows ``--add-dir``'s rules (:func:`checked`): never inside the workspace or another
folder, nor holding one; never a folder ``driveros trust`` refuses (a home directory or one
holding it); never driveros' state directory, one holding it or inside it; never a folder
holding a secret file (``driveros.runs.secret_files``: its values are not in the run's
redactor). The checks read the file system: they run off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from driveros_lsp._run import RunError
from driveros_lsp._wire import printable

if TYPE_CHECKING:
    from driveros_lsp._editor import Editor

logger = logging.getLogger(__name__)

#: The action that runs the task across every folder (the first is its workspace).
ALL_FOLDERS = "All folders"
#: The question's text, before the folder names.
QUESTION = "DriverOS: which folder should this task run in?"


@dataclass(frozen=True)
class TaskFolders:
    """The run's workspace and the folders added to it (writable)."""

    workspace: Path
    added: list[Path] = field(default_factory=list)


def workspace_folders(editor: Editor) -> list[tuple[str, Path]]:
    """The client's workspace folders as (name, path), in the client's order."""
    from pygls.uris import to_fs_path

    found: list[tuple[str, Path]] = []
    for folder in editor.workspace.folders.values():
        path = to_fs_path(folder.uri)
        if path:
            found.append((folder.name or Path(path).name, Path(path)))
    return found


async def named_folders(editor: Editor, uris: list[str]) -> TaskFolders:
    """The folders ``uris`` name, each one of the client's workspace folders (no repeats)."""
    return await asyncio.to_thread(_named, workspace_folders(editor), uris)


def _named(folders: list[tuple[str, Path]], uris: list[str]) -> TaskFolders:
    from pygls.uris import to_fs_path

    known = {path.resolve(): path for _, path in folders}
    chosen: list[Path] = []
    for uri in uris:
        try:
            given = to_fs_path(uri) if uri.startswith("file:") else None
        except Exception:  # a malformed URI names no folder
            given = None
        path = known.get(Path(given).resolve()) if given else None
        if path is None:
            raise RunError(f"{uri} is not one of the workspace's folders")
        if path not in chosen:
            chosen.append(path)
    return checked(TaskFolders(workspace=chosen[0], added=chosen[1:]))


def checked(chosen: TaskFolders) -> TaskFolders:
    """``chosen`` when its added folders may be given to a run, else RunError saying why.
    Blocking (resolves paths, walks each added folder)."""
    from driveros.runs import secret_files
    from driveros.state import state_dir
    from driveros.trust import broad_root

    state = Path(os.path.realpath(state_dir()))
    seen = [chosen.workspace.resolve()]
    for folder in chosen.added:
        path = folder.resolve()
        reason = broad_root(path, Path.home())
        if reason is None and (state.is_relative_to(path) or path.is_relative_to(state)):
            reason = "it is, holds or lies inside driveros' state directory"
        for other in seen:
            if reason is None and (path.is_relative_to(other) or other.is_relative_to(path)):
                reason = f"it overlaps the folder {other}"
        if reason is None:
            reason = _secret_reason(secret_files(path))
        if reason is not None:
            raise RunError(f"the folder {folder} cannot be added to the task: {reason}")
        seen.append(path)
    return chosen


def _secret_reason(found: list[str] | None) -> str | None:
    if found is None:
        return "it holds too many files to check for secret files"
    if found:
        listed = ", ".join(printable(s) for s in found[:5])
        return (
            f"it holds secret files ({listed}); their values could not be redacted from "
            "what commands print"
        )
    return None


def _labels(folders: list[tuple[str, Path]]) -> list[str]:
    """One action title per folder: its name, with its path where two names are alike."""
    names = [name for name, _ in folders]
    return [name if names.count(name) == 1 else f"{name} ({path})" for name, path in folders]


async def ask_folders(editor: Editor, folders: list[tuple[str, Path]]) -> TaskFolders:
    """Ask the user which of ``folders`` (two or more) a task runs in."""
    labels = _labels(folders)
    listed = ", ".join(
        f"{label} ({path})" for label, (_, path) in zip(labels, folders, strict=True)
    )
    if not editor.traits.message_actions:
        raise RunError(
            f"this workspace has {len(folders)} folders ({listed}): name the task's folder, or "
            "several, in the command's `folders` argument (a list of folder URIs)"
        )
    params = lsp.ShowMessageRequestParams(
        type=lsp.MessageType.Info,
        message=f"{QUESTION} The workspace has {len(folders)} folders.",
        actions=[lsp.MessageActionItem(title=t) for t in (*labels, ALL_FOLDERS)],
    )
    try:
        answer = await editor.window_show_message_request_async(params)
    except Exception as exc:  # the client failed the request: not an answer
        logger.info("the client did not answer the folder question: %s", exc)
        answer = None
    title = answer.title if isinstance(answer, lsp.MessageActionItem) else None
    if title == ALL_FOLDERS:
        paths = [path for _, path in folders]
        return await asyncio.to_thread(checked, TaskFolders(workspace=paths[0], added=paths[1:]))
    for label, (_, path) in zip(labels, folders, strict=True):
        if title == label:
            return TaskFolders(workspace=path)
    raise RunError("no folder was chosen: the task was not started")

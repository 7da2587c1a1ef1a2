"""The editor's text of a file, adopted when the agent first touches it (a lazy overlay).

A front end that can read its client's buffers (``driveros acp`` with ``fs/read_text_file``)
gives :func:`execute_run` a :data:`ReadBuffer`. The first time a review run's agent reads,
edits or writes a path, the buffer is asked for and adopted into the scratch copy
(:meth:`driveros.review.ScratchWorkspace.adopt_buffer`): the tool, and every command after
it, sees the unsaved text, and the proposal's "before" is that text. A path is asked about
once per run; secret files (the sandbox's deny list) never are.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from driveros.sandbox import secret_path_reason

if TYPE_CHECKING:
    from driveros.review import ScratchWorkspace

log = logging.getLogger(__name__)

#: The editor's text of a workspace-relative path, or None when it has none to offer.
ReadBuffer = Callable[[str], Awaitable[str | None]]


def _relative(path: str) -> str | None:
    """``path`` as the file tools take it, normalised; None for what they would refuse."""
    if not path or path.startswith("/") or "\x00" in path:
        return None
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def buffer_hook(
    scratch: ScratchWorkspace, read: ReadBuffer, *, known: Iterable[str] = ()
) -> Callable[[str], Awaitable[None]]:
    """The agent's ``before_file`` for a run on ``scratch``; ``known`` paths already hold a
    buffer (the run's overlays)."""
    asked: set[str] = set(known)

    async def before(path: str) -> None:
        rel = _relative(path)
        if rel is None or rel in asked or secret_path_reason(rel) is not None:
            return
        asked.add(rel)
        try:
            text = await read(rel)
        except Exception as exc:  # the editor's answer is foreign input: the disk counts
            log.info("reading the editor's buffer of %s failed: %s", rel, exc)
            return
        if text is not None and await scratch.adopt_buffer(rel, text):
            log.debug("adopted the editor's buffer of %s", rel)

    return before

"""Three-way line merge: carry the agent's edits onto a document the user edited meanwhile."""

from __future__ import annotations

from difflib import SequenceMatcher

_Hunk = tuple[int, int, tuple[str, ...]]


def _hunks(base: list[str], other: list[str]) -> list[_Hunk]:
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    return [
        (i1, i2, tuple(other[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _touch(a: _Hunk, b: _Hunk) -> bool:
    # Closed intervals: edits on adjacent lines count as overlapping, as in git merge-file.
    return a[0] <= b[1] and b[0] <= a[1]


def rebase_text(base: str, theirs: str, ours: str) -> str | None:
    """Apply the change ``base -> ours`` onto ``theirs`` when it still applies cleanly.

    ``base`` is the document when the run started, ``theirs`` the user's current version and
    ``ours`` the agent's. Returns the merged text, or None when an agent hunk overlaps or
    touches a line the user changed (a conflict: the caller must not clobber the document).
    Identical edits on both sides merge to one.
    """
    if theirs in (base, ours):
        return ours
    if ours == base:
        return theirs
    b = base.splitlines(keepends=True)
    mine = _hunks(b, ours.splitlines(keepends=True))
    user = _hunks(b, theirs.splitlines(keepends=True))
    kept = list(user)
    for h in mine:
        clashes = [u for u in user if _touch(h, u)]
        if not clashes:
            kept.append(h)
        elif clashes != [h]:
            return None
    kept.sort(key=lambda h: (h[0], h[1]))
    out: list[str] = []
    pos = 0
    for start, end, lines in kept:
        out.extend(b[pos:start])
        out.extend(lines)
        pos = end
    out.extend(b[pos:])
    return "".join(out)

"""What a view's private index is known to hold (:class:`IndexedFiles`), so staging asks git
about ignore rules only for the other paths (a file in the index is never ignored)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator


def _ancestors(path: str) -> Iterator[str]:
    """``a`` and ``a/b`` for ``a/b/c``."""
    start = 0
    while (slash := path.find("/", start)) != -1:
        yield path[:slash]
        start = slash + 1


class IndexedFiles:
    """Files (work-relative paths) the index holds, never one it does not: a path git took
    out of the index when it recorded a change (a file that became a directory, a directory
    that became a file, a deletion) is taken out here too. Counts per directory keep each
    change proportional to the path's depth; only a directory replaced by a file walks the
    set, to drop what was under it."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._files: set[str] = set()
        self._under: Counter[str] = Counter()
        for path in paths:
            self._files.add(path)
            self._under.update(_ancestors(path))

    def __contains__(self, path: object) -> bool:
        return path in self._files

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def discard(self, path: str) -> None:
        """``path`` is no file in the index (gone, or a directory now), nor anything under it."""
        if path in self._files:
            self._files.remove(path)
            self._under.subtract(_ancestors(path))
        if self._under[path] > 0:
            for inner in [f for f in self._files if f.startswith(path + "/")]:
                self.discard(inner)
        self._under.pop(path, None)

    def add_file(self, path: str) -> None:
        """``path`` is a file in the index: no directory of that name, no file above it."""
        if path in self._files:
            return
        self.discard(path)
        for above in _ancestors(path):
            if above in self._files:
                self._files.remove(above)
                self._under.subtract(_ancestors(above))
        self._files.add(path)
        self._under.update(_ancestors(path))

    def add_directory(self, path: str) -> None:
        """``path`` was recorded as a directory: no file of that name or above it, and what
        the index held under it may have gone (its files now are asked about next time)."""
        self.discard(path)
        for above in _ancestors(path):
            if above in self._files:
                self._files.remove(above)
                self._under.subtract(_ancestors(above))

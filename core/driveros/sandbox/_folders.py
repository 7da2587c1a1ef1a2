"""Folders a sandbox's file operations reach besides its workspace (``--add-dir DIR[:rw]``).

A path naming an added folder is absolute: the folder's real path (``/home/me/lib``) then a
path inside it. The rest of that path goes through the folder's own fence exactly as a
workspace path goes through the workspace's (no ``..``, no symlink out of the folder, ``.git``
refused, secret files hidden). A writable folder's files may live elsewhere (a review run's
scratch view of it): ``root`` is where they are, ``at`` what the tools and commands call it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from driveros.sandbox._files import HostFiles
from driveros.sandbox._protocol import PolicyError, SearchMatch, SearchResults


@dataclass(frozen=True)
class AddedFolder:
    """One added folder: its name for the tools (``at``) and its fenced files."""

    at: str
    files: HostFiles
    writable: bool
    #: More host paths its commands see read-only with it, each at its sandbox path (a
    #: review copy's git directory and the ``.git`` link naming it: driveros.runs).
    binds: tuple[tuple[Path, str], ...] = ()

    @property
    def in_place(self) -> bool:
        """Its files are where the tools name them (not a review run's view of it)."""
        return str(self.files.root) == self.at

    def shown(self, rel: str) -> str:
        """The tools' name of ``rel`` (a path relative to the folder)."""
        rel = rel.strip("/")
        return self.at if rel in ("", ".") else f"{self.at}/{rel}"

    def results(self, found: SearchResults) -> SearchResults:
        """``found`` (paths relative to the folder) with the tools' names."""
        return SearchResults(
            (SearchMatch(path=self.shown(m.path), line=m.line, text=m.text) for m in found),
            (self.shown(p) for p in found.skipped),
            too_large=(self.shown(p) for p in found.too_large),
            binary=(self.shown(p) for p in found.binary),
            odd_names=(self.shown(p) for p in found.odd_names),
        )


class Folders:
    """The added folders of one sandbox; :meth:`route` picks the one an absolute path names."""

    def __init__(self) -> None:
        self._folders: list[AddedFolder] = []

    def __bool__(self) -> bool:
        return bool(self._folders)

    def __iter__(self) -> Iterator[AddedFolder]:
        return iter(self._folders)

    def written_in_place(self) -> list[Path]:
        """Where the writable folders written in place are (not a review run's view of one):
        guarded and swept at close as the workspace is."""
        return [f.files.root for f in self._folders if f.writable and f.in_place]

    def add(
        self,
        at: Path,
        files: HostFiles,
        *,
        writable: bool,
        binds: tuple[tuple[Path, str], ...] = (),
    ) -> None:
        self._folders.append(AddedFolder(str(at).rstrip("/") or "/", files, writable, binds))

    def route(self, path: str, *, write: bool = False) -> tuple[AddedFolder, str] | None:
        """The folder ``path`` is in and the path relative to it, or None (not an absolute
        path inside an added folder). ``write``: refuse a read-only folder (PolicyError)."""
        if not path.startswith("/"):
            return None
        for folder in self._folders:
            if path == folder.at or path.startswith(folder.at + "/"):
                rel = path[len(folder.at) :].lstrip("/") or "."
                if write and not folder.writable:
                    raise PolicyError(
                        f"{path!r} is in {folder.at!r}, a read-only added folder "
                        "(--add-dir DIR); the run may read it, never change it "
                        "(DIR:rw makes it writable)",
                        path=path,
                    )
                return folder, rel
        return None

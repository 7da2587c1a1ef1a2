"""The docker tier's added folders (``--add-dir DIR[:rw]``): each bound at its own absolute
path in the container, as the local tier binds it (docs/docker.md, "Added folders in the
docker tier").

A read-only folder is bound read-only. A writable one is bound writable from where its files
are: a review run's scratch view of it, or the folder itself outside a review, where, as in
the local tier, every ``.git`` in it and its ``.driveros`` are bound read-only over it (no
command plants a git hook, a ``core.fsmonitor`` or a ``hooks.toml`` the user's next ``git``
or trusted run would run on the host), and a ``.driveros/hooks.toml`` made where there was no
``.driveros`` is renamed aside at close.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from driveros.sandbox._folders import Folders
from driveros.sandbox._guards import guard_entries
from driveros.sandbox._protocol import PolicyError

#: Container paths an added folder may neither be nor lie inside: the workspace, the
#: sessions' and processes' state in ``/tmp``, what the kernel and docker provide, and the
#: read-only mounts driveros adds (language servers, a review run's git directory).
RESERVED = (
    "/workspace",
    "/tmp/.driveros",  # noqa: S108 - the container's own tmpfs
    "/proc",
    "/dev",
    "/sys",
    "/opt/driveros",
    "/driveros",
)


def check_folder_target(at: str) -> None:
    """Refuse (PolicyError) a folder the container cannot show at its own path ``at``."""
    pure = PurePosixPath(at)
    if not pure.is_absolute() or ".." in pure.parts or str(pure) in ("/", "/tmp"):  # noqa: S108
        raise PolicyError(f"added folder {at!r}: the docker tier cannot mount it there", path=at)
    for reserved in map(PurePosixPath, RESERVED):
        if pure == reserved or reserved in pure.parents or pure in reserved.parents:
            raise PolicyError(
                f"added folder {at!r} overlaps {reserved} in the container; give another folder",
                path=at,
            )


def guard_volumes(root: Path, at: str) -> dict[str, dict[str, str]]:
    """Read-only binds over :func:`guard_entries` of ``root``, at their place under ``at`` in
    the container. Blocking: ``root`` is walked."""
    volumes: dict[str, dict[str, str]] = {}
    for entry in guard_entries(root):
        target = PurePosixPath(at, entry.relative_to(root).as_posix())
        volumes[str(entry)] = {"bind": str(target), "mode": "ro"}
    return volumes


def folder_volumes(folders: Folders) -> dict[str, dict[str, str]]:
    """The docker SDK's ``volumes`` for ``folders`` (host path -> bind and mode). Blocking:
    a writable folder written in place is walked for its ``.git`` entries."""
    volumes: dict[str, dict[str, str]] = {}
    for folder in folders:
        root = folder.files.root
        volumes[str(root)] = {"bind": folder.at, "mode": "rw" if folder.writable else "ro"}
        if folder.writable and folder.in_place:
            volumes.update(guard_volumes(root, folder.at))
        # Docker mounts the deeper targets last: a bind inside the folder lies over it.
        volumes.update({str(src): {"bind": dst, "mode": "ro"} for src, dst in folder.binds})
    return volumes

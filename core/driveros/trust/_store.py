"""The trust store: the workspaces the user trusts, one JSON file in the user's config directory.

A workspace is keyed by its resolved real path; trusting a directory trusts everything below
it (as VS Code's Workspace Trust does for a trusted parent folder). The file is written
atomically under an advisory lock, so a CLI and a language server may share it. A store that
is unreadable, or writable by anyone but its owner, trusts nothing (reading it never fails a
run: an untrusted workspace is the safe answer).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
import pwd
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from driveros._atomic import write_atomic
from driveros._errors import ConfigError
from driveros._paths import user_config_dir, user_home

log = logging.getLogger(__name__)

#: The store's file name inside the user's driveros config directory.
STORE_NAME = "trusted-workspaces.json"
_VERSION = 1


class TrustError(ConfigError):
    """The trust store cannot be changed (a missing path, an unwritable or corrupt store)."""


class TrustedWorkspace(BaseModel):
    """One trusted directory: its resolved real path and when it was trusted (UTC, ISO 8601)."""

    model_config = ConfigDict(frozen=True)

    path: str
    trusted_at: str


class _StoreFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    version: int = _VERSION
    workspaces: tuple[TrustedWorkspace, ...] = ()


def real_path(path: str | os.PathLike[str], *, strict: bool = True) -> Path:
    """``path`` with ``~`` expanded and every symlink resolved (the key of the store)."""
    try:
        return Path(path).expanduser().resolve(strict=strict)
    except (OSError, RuntimeError) as exc:
        raise TrustError(f"cannot resolve {os.fspath(path)!r}: {exc}", path=str(path)) from exc


#: Top-level directories that hold the system's or many people's files, never one project.
SHARED_ROOTS = frozenset(
    [
        *("/tmp", "/var", "/usr", "/etc", "/home", "/opt", "/srv", "/mnt", "/media", "/run"),  # noqa: S108
        *("/proc", "/sys", "/dev", "/boot", "/lib", "/bin", "/sbin", "/snap", "/nix"),
    ]
)
#: Accounts from this uid on are people (login.defs' UID_MIN), but for ``nobody``.
_FIRST_PERSON_UID = 1000
_NOBODY_UID = 65534


def _people_homes() -> list[Path]:
    try:
        entries = pwd.getpwall()
    except OSError:  # pragma: no cover - no passwd database
        return []
    people = [e for e in entries if _FIRST_PERSON_UID <= e.pw_uid != _NOBODY_UID]
    return [Path(os.path.realpath(e.pw_dir)) for e in people if e.pw_dir.startswith("/")]


def broad_root(target: Path, home: Path | None) -> str | None:
    """Why the resolved directory ``target`` is no project but a root holding many (the
    filesystem root, a top-level system directory, the home directory ``home``, another
    person's home, or a directory holding one), or None. ``driveros trust`` refuses such a
    directory, and ``driveros acp`` a session there."""
    if target == Path(target.anchor):
        return "it is the filesystem root"
    if str(target) in SHARED_ROOTS:
        return "it is a system directory shared by many projects"
    own = Path(os.path.realpath(home)) if home is not None else None
    for other in _people_homes():
        if other in (home, own) or other == Path("/"):
            continue
        if target == other:
            return "it is another account's home directory"
        if target in other.parents:
            return "it holds other accounts' home directories"
    if home is None:
        return None
    real_home = Path(os.path.realpath(home))
    if target in (home, real_home):
        return "it is the home directory"
    if target in real_home.parents or target in home.parents:
        return "it holds the home directory"
    return None


class TrustStore:
    """Reads and changes the trusted-workspaces file in ``directory``.

    ``TrustStore.default()`` uses the user's driveros config directory
    (``$XDG_CONFIG_HOME/driveros`` or ``~/.config/driveros``).
    """

    def __init__(self, directory: Path, *, home: Path | None = None) -> None:
        self.directory = directory
        self.path = directory / STORE_NAME
        self._home = home

    @classmethod
    def default(cls, environ: Mapping[str, str] | None = None) -> TrustStore:
        """The store in the user's config directory (read from ``environ``, default: the
        real process environment)."""
        return cls(user_config_dir(environ), home=user_home(environ))

    # ------------------------------------------------------------------ reading

    def entries(self) -> tuple[TrustedWorkspace, ...]:
        """Every trusted directory, in the order they were trusted (empty when unreadable)."""
        return self._read(strict=False).workspaces

    def is_trusted(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` (resolved) or one of its parents is trusted."""
        try:
            target = real_path(path)
        except TrustError:
            return False
        for entry in self.entries():
            stored = Path(entry.path)
            if target == stored or stored in target.parents:
                return True
        return False

    # ------------------------------------------------------------------ changing

    def trust(self, path: str | os.PathLike[str]) -> TrustedWorkspace:
        """Trust the existing directory ``path``; returns its entry (the old one if present).

        Refuses the filesystem root and the home directory: trusting those would trust every
        repository the user ever clones.
        """
        target = real_path(path)
        if not target.is_dir():
            raise TrustError(f"not a directory: {target}", path=str(target))
        if broad_root(target, self._home) is not None:
            raise TrustError(
                f"refusing to trust {target}: it would trust every repository below it; "
                "trust each project directory instead",
                path=str(target),
            )
        with self._locked():
            current = self._read(strict=True)
            for entry in current.workspaces:
                if entry.path == str(target):
                    return entry
            now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            entry = TrustedWorkspace(path=str(target), trusted_at=now)
            self._write(current.model_copy(update={"workspaces": (*current.workspaces, entry)}))
            return entry

    def revoke(self, path: str | os.PathLike[str]) -> list[TrustedWorkspace]:
        """Stop trusting ``path`` (given as typed or resolved; it need not exist any more).

        Returns the removed entries (empty when ``path`` was not trusted itself; a trusted
        parent stays trusted and keeps trusting ``path``).
        """
        raw = Path(path).expanduser()
        keys = {str(raw.absolute()), str(real_path(raw, strict=False))}
        with self._locked():
            current = self._read(strict=True)
            removed = [e for e in current.workspaces if e.path in keys]
            if removed:
                kept = tuple(e for e in current.workspaces if e.path not in keys)
                self._write(current.model_copy(update={"workspaces": kept}))
            return removed

    def covering(self, path: str | os.PathLike[str]) -> TrustedWorkspace | None:
        """The entry that makes ``path`` trusted (itself or the nearest trusted parent)."""
        try:
            target = real_path(path)
        except TrustError:
            return None
        best: TrustedWorkspace | None = None
        for entry in self.entries():
            stored = Path(entry.path)
            if (target == stored or stored in target.parents) and (
                best is None or len(entry.path) > len(best.path)
            ):
                best = entry
        return best

    # ------------------------------------------------------------------ file

    def _read(self, *, strict: bool) -> _StoreFile:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return _StoreFile()
        except OSError as exc:
            return self._unusable(f"cannot open {self.path}: {exc}", strict=strict)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return self._unusable(f"{self.path} is not a regular file", strict=strict)
            if info.st_uid != os.getuid() or info.st_mode & 0o022:
                return self._unusable(
                    f"{self.path} is writable by someone else (or not yours): ignored",
                    strict=strict,
                )
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(4 * 1024 * 1024)
        except OSError as exc:
            return self._unusable(f"cannot read {self.path}: {exc}", strict=strict)
        finally:
            os.close(fd)
        try:
            parsed = _StoreFile.model_validate(json.loads(data))
        except (ValueError, ValidationError) as exc:
            return self._unusable(f"{self.path} is not a valid trust store: {exc}", strict=strict)
        if parsed.version != _VERSION:
            return self._unusable(
                f"{self.path} has version {parsed.version}; this driveros reads {_VERSION}",
                strict=strict,
            )
        return parsed

    def _unusable(self, message: str, *, strict: bool) -> _StoreFile:
        if strict:
            raise TrustError(f"{message}; fix or delete it", path=str(self.path))
        log.warning("trust store: %s; every workspace is untrusted", message)
        return _StoreFile()

    def _write(self, content: _StoreFile) -> None:
        text = json.dumps(content.model_dump(mode="json"), indent=2) + "\n"
        try:
            write_atomic(self.path, text.encode("utf-8"), perms=0o600, prefix="trust-")
        except OSError as exc:
            raise TrustError(f"cannot write {self.path}: {exc}", path=str(self.path)) from exc

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(
                self.directory / f".{STORE_NAME}.lock",
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
            )
        except OSError as exc:
            raise TrustError(
                f"cannot use the config directory {self.directory}: {exc}",
                path=str(self.directory),
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

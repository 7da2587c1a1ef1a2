"""Checking a caller's workspace-relative path before anything touches the filesystem."""

from __future__ import annotations

from pathlib import PurePosixPath

from driveros.sandbox._protocol import InvalidPathError, PathEscapeError

#: Linux limits: a whole path and one name, in bytes.
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


def _has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)


def split_path(path: str, *, root: PurePosixPath | None = None) -> tuple[str, ...]:
    """The components of a workspace-relative ``path``; ``()`` for the root (``"."`` or ``""``).

    Refuses absolute paths and ``..`` anywhere (PathEscapeError), NUL, control characters
    (newlines included), names that are not valid UTF-8 and over-long paths
    (InvalidPathError). ``root`` only improves the message for an absolute path inside it.
    """
    if not isinstance(path, str):
        raise InvalidPathError(f"path must be a string, not {type(path).__name__}", path=path)
    if "\x00" in path:
        raise InvalidPathError("path contains a NUL byte", path=path)
    if _has_control(path):
        raise InvalidPathError(
            f"path {path!r} contains a control character (newline, tab, ...); refused",
            path=path,
        )
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidPathError(f"path {path!r} is not valid UTF-8", path=path) from exc
    if len(encoded) > MAX_PATH_BYTES:
        raise InvalidPathError(f"path is longer than {MAX_PATH_BYTES} bytes", path=path[:80])
    if path.startswith("/"):
        hint = ""
        if root is not None:
            pure = PurePosixPath(path)
            if pure == root or root in pure.parents:
                rel = pure.relative_to(root).as_posix()
                hint = f" (did you mean {rel!r}?)"
        raise PathEscapeError(
            f"absolute path {path!r} refused: paths are relative to the workspace{hint}",
            path=path,
        )
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if ".." in parts:
        raise PathEscapeError(f"path {path!r} contains '..'; refused", path=path)
    for part in parts:
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise InvalidPathError(f"a name in {path!r} is over {MAX_NAME_BYTES} bytes", path=path)
    return parts


#: Code points that HFS+ ignores in names (so ``.g\u200cit`` is ``.git`` there).
_IGNORABLE = frozenset(
    [0x200C, 0x200D, 0x200E, 0x200F, 0xFEFF, *range(0x202A, 0x202F), *range(0x206A, 0x2070)]
)


def is_git_name(name: str) -> bool:
    """Whether ``name`` is, on some filesystem, the repository's ``.git``.

    Case-folded (``.GIT``, ``.Git``), with the code points HFS+ ignores removed, trailing dots
    and spaces stripped and an NTFS stream suffix cut (``.git.``, ``.git::$INDEX_ALLOCATION``),
    and NTFS's short name ``git~1``: the names git itself refuses to check out.
    """
    cleaned = "".join(ch for ch in name if ord(ch) not in _IGNORABLE)
    cleaned = cleaned.split(":", 1)[0].rstrip(". ").casefold()
    return cleaned in (".git", "git~1")


#: Where a trusted workspace keeps what driveros runs as the user, outside the sandbox.
STATE_DIR_NAME = ".driveros"
HOOKS_FILE_NAME = "hooks.toml"


def is_host_run_file(parts: tuple[str, ...]) -> bool:
    """Whether the workspace path ``parts`` is a trusted workspace's hooks file
    (``.driveros/hooks.toml``, any case): its commands run on the host, so neither the
    model's file tools nor sandboxed commands write it (docs/security.md)."""
    folded = tuple(p.casefold() for p in parts)
    return folded == (STATE_DIR_NAME, HOOKS_FILE_NAME)


def is_safe_name(name: str) -> bool:
    """Whether a name read from disk can be shown to callers and given back as a path."""
    if _has_control(name):
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape_name(name: str) -> str:
    """A name read from disk, shown safely: undecodable bytes as ``\\xNN`` (``bad\\xffname``),
    control characters as ``\\xNN`` too; a safe name is returned as it is."""
    if is_safe_name(name):
        return name
    out = []
    for byte_or_char in name:
        code = ord(byte_or_char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape could not decode
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(byte_or_char)
    return "".join(out)

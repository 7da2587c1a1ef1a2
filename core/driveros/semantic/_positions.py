"""Columns as the file tools show them (characters, 1-based) and as a server counts them."""

from __future__ import annotations

from urllib.parse import quote, unquote, urlparse


def line_of(text: str, line: int) -> str:
    """The 0-based ``line`` of ``text`` without its end ("" past the end)."""
    lines = text.split("\n")
    if not 0 <= line < len(lines):
        return ""
    return lines[line].removesuffix("\r")


def to_units(line_text: str, char: int, encoding: str) -> int:
    """Characters → the server's units (``utf-16``, ``utf-8`` or ``utf-32``)."""
    head = line_text[:char]
    if encoding == "utf-8":
        return len(head.encode("utf-8")) + max(0, char - len(line_text))
    if encoding == "utf-32":
        return char
    return len(head.encode("utf-16-le")) // 2 + max(0, char - len(line_text))


def to_chars(line_text: str, units: int, encoding: str) -> int:
    """The server's units → characters (a position past the line's end is kept past it)."""
    if encoding == "utf-32":
        return units
    seen = 0
    for i, ch in enumerate(line_text):
        if seen >= units:
            return i
        seen += len(ch.encode("utf-8")) if encoding == "utf-8" else (2 if ord(ch) > 0xFFFF else 1)
    return len(line_text) + max(0, units - seen)


def path_uri(root: str, rel: str) -> str:
    return "file://" + quote(f"{root.rstrip('/')}/{rel}")


def uri_path(root: str, uri: str) -> tuple[str, bool]:
    """(path, inside): the workspace-relative path of a file URI under ``root``, else its
    absolute path and False."""
    parsed = urlparse(uri)
    path = unquote(parsed.path) if parsed.scheme == "file" else uri
    base = root.rstrip("/") + "/"
    if path.startswith(base):
        return path[len(base) :], True
    return path, False

"""Counted nouns in messages: "1 file", "2 files", never "1 file(s)" or "1 files"."""

from __future__ import annotations


def count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def files(n: int) -> str:
    return count(n, "file")

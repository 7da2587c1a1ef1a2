"""What a completion request sends: a window around the cursor and a few related snippets.

The window is the text before and after the cursor, cut at line boundaries to fit the token
budget (about four characters a token). Snippets come from other open buffers and recently
edited files, ranked cheaply (like Copilot's neighbouring tabs): the identifiers of the lines
before the cursor against those of 20-line chunks of each other file, recently edited files
first on ties. A file on the sandbox's secret deny list is never sent, as the current file (no
request at all) or as a snippet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from driveros.llm.fim import FimRequest, Snippet

#: Characters per token for the budget (a conservative average for code).
CHARS_PER_TOKEN = 4
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_CHUNK_LINES = 20
_QUERY_LINES = 30
_MAX_SNIPPETS = 3
_MAX_FILES = 20
_MAX_LINES_SCANNED = 2000
_MIN_SCORE = 0.08


@dataclass(frozen=True, slots=True)
class OtherFile:
    """Another file the user has open or edited lately (``recency``: higher is newer)."""

    path: str
    text: str
    recency: float = 0.0


@dataclass
class ChunkIndex:
    """Identifier sets of a file's chunks, kept per (path, text) so ranking stays cheap."""

    _by_path: dict[str, tuple[int, list[tuple[str, frozenset[str]]]]] = field(default_factory=dict)

    def chunks(self, other: OtherFile) -> list[tuple[str, frozenset[str]]]:
        stamp = hash(other.text)
        cached = self._by_path.get(other.path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        lines = other.text.split("\n")[:_MAX_LINES_SCANNED]
        step = _CHUNK_LINES // 2
        out = []
        for start in range(0, max(len(lines) - step, 1), step):
            body = "\n".join(lines[start : start + _CHUNK_LINES])
            out.append((body, frozenset(_WORD.findall(body))))
        self._by_path[other.path] = (stamp, out)
        return out

    def forget_except(self, paths: set[str]) -> None:
        for path in [p for p in self._by_path if p not in paths]:
            del self._by_path[path]


def is_secret(path: str) -> bool:
    """Whether ``path`` is on the deny list (docs/sandbox.md, "Secret files")."""
    from driveros.sandbox import secret_path_reason  # loaded with the first completion

    return secret_path_reason(path) is not None


def _window(prefix: str, suffix: str, budget: int) -> tuple[str, str]:
    """``prefix`` and ``suffix`` cut at line boundaries to ``budget`` characters together
    (three quarters for the prefix, the rest for the suffix)."""
    keep_before = budget * 3 // 4
    keep_after = budget - keep_before
    if len(prefix) > keep_before:
        cut = prefix[-keep_before:]
        newline = cut.find("\n")
        prefix = cut[newline + 1 :] if newline >= 0 else cut
    if len(suffix) > keep_after:
        cut = suffix[:keep_after]
        newline = cut.rfind("\n")
        suffix = cut[:newline] if newline >= 0 else cut
    return prefix, suffix


def rank_snippets(
    query: str, others: list[OtherFile], index: ChunkIndex, budget: int
) -> tuple[Snippet, ...]:
    """The best few chunks of ``others`` for ``query`` within ``budget`` characters."""
    words = frozenset(_WORD.findall("\n".join(query.split("\n")[-_QUERY_LINES:])))
    if not words or budget <= 0:
        return ()
    scored: list[tuple[float, float, str, str]] = []
    newest = sorted(others, key=lambda o: o.recency, reverse=True)[:_MAX_FILES]
    for other in newest:
        if is_secret(other.path):
            continue
        for body, ids in index.chunks(other):
            if not ids:
                continue
            score = len(words & ids) / len(words | ids)
            if score >= _MIN_SCORE:
                scored.append((score, other.recency, other.path, body))
    scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
    picked: list[Snippet] = []
    used = 0
    for _score, _recency, path, body in scored:
        if len(picked) >= _MAX_SNIPPETS:
            break
        if used + len(body) > budget or any(p.path == path for p in picked):
            continue
        picked.append(Snippet(path=path, text=body))
        used += len(body)
    return tuple(picked)


def build_request(
    text: str,
    offset: int,
    *,
    path: str,
    language: str | None,
    others: list[OtherFile],
    index: ChunkIndex,
    context_tokens: int,
    max_tokens: int,
) -> FimRequest | None:
    """The request for a completion at ``offset`` of ``text``; None for a secret file."""
    if is_secret(path):
        return None
    budget = context_tokens * CHARS_PER_TOKEN
    snippet_budget = budget // 5 if others else 0
    prefix, suffix = _window(text[:offset], text[offset:], budget - snippet_budget)
    line_rest = suffix.split("\n", 1)[0]
    # The cursor's line goes on: one line. Else a block, ended by a blank line pair.
    stop = ("\n",) if line_rest.strip() else ("\n\n\n",)
    snippets = rank_snippets(prefix, others, index, snippet_budget)
    return FimRequest(
        prefix=prefix,
        suffix=suffix,
        path=path,
        language=language,
        snippets=snippets,
        max_tokens=max_tokens,
        stop=stop,
    )

"""Next-edit suggestions: after the user edits, the edit that likely comes next.

Two predictors, cheapest first, each with a confidence; a suggestion is offered only at or
above ``inlineCompletion.nextEditConfidence``:

- **rename**: the line the user is editing differs from how it was before the edit by exactly
  one identifier (``foo`` became ``bar``); the next whole-word ``foo`` after the cursor (or,
  failing that, shortly before it) is to become ``bar``. Confidence 0.9, no model call.
- **model**: the recent edits and the numbered lines around the cursor go to the chat model,
  which answers one JSON edit ``{"line", "old", "new", "confidence"}``; it is offered only
  when ``old`` is really on that line, within the window, and the model is confident enough.

A suggestion replaces text on one line (LSP 3.18: an item's range starts and ends on the same
line); its new text may span lines.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from driveros_lsp.inline._post import visible

if TYPE_CHECKING:
    from driveros.llm import Provider

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AFTER_LINES = 60
_BEFORE_LINES = 30
_WINDOW = 20
RENAME_CONFIDENCE = 0.9
_SYSTEM = (
    "You predict the next edit a programmer makes, from their recent edits. Answer with one "
    'JSON object and nothing else: {"line": N, "old": "text on line N to replace", "new": '
    '"replacement", "confidence": 0.0-1.0}. Use {"confidence": 0} when no edit is likely.'
)


@dataclass(frozen=True, slots=True)
class NextEdit:
    """Replace ``text[line][start:end]`` (0-based line; string indexes) with ``new_text``."""

    line: int
    start: int
    end: int
    new_text: str
    confidence: float
    source: str


@dataclass
class _Session:
    line: int
    before: str  # the line as it was when the user started editing it
    after: str


class EditHistory:
    """The user's recent line edits per document (observed at each request)."""

    def __init__(self, *, keep: int = 8) -> None:
        self._texts: dict[str, list[str]] = {}
        self._session: dict[str, _Session] = {}
        self.done: deque[tuple[str, int, str, str]] = deque(maxlen=keep)

    def observe(self, uri: str, text: str) -> None:
        lines = text.split("\n")
        old = self._texts.get(uri)
        self._texts[uri] = lines
        if old is None or old == lines:
            return
        if len(old) != len(lines):
            self._close(uri)  # lines added or removed: not a one-line edit
            return
        changed = [i for i, (a, b) in enumerate(zip(old, lines, strict=True)) if a != b]
        if len(changed) != 1:
            self._close(uri)
            return
        line = changed[0]
        session = self._session.get(uri)
        if session is None or session.line != line:
            self._close(uri)
            session = _Session(line, old[line], lines[line])
            self._session[uri] = session
        session.after = lines[line]

    def _close(self, uri: str) -> None:
        session = self._session.pop(uri, None)
        if session is not None and session.before != session.after:
            self.done.append((uri, session.line, session.before, session.after))

    def current(self, uri: str) -> tuple[int, str, str] | None:
        """The line being edited in ``uri``: (line, before, after)."""
        session = self._session.get(uri)
        if session is None or session.before == session.after:
            return None
        return session.line, session.before, session.after

    def forget(self, keep: set[str]) -> None:
        for uri in [u for u in self._texts if u not in keep]:
            del self._texts[uri]
            self._session.pop(uri, None)


def _renamed(before: str, after: str) -> tuple[str, str] | None:
    """(old, new) when ``after`` is ``before`` with one identifier changed."""
    a, b = _IDENT.findall(before), _IDENT.findall(after)
    if len(a) != len(b) or _IDENT.sub("", before) != _IDENT.sub("", after):
        return None
    pairs = {(x, y) for x, y in zip(a, b, strict=True) if x != y}
    if len(pairs) != 1:
        return None
    old, new = next(iter(pairs))
    return old, new


def rename_suggestion(
    history: EditHistory, uri: str, lines: list[str], cursor_line: int
) -> NextEdit | None:
    """The next place a rename the user is making has to be repeated, or None."""
    current = history.current(uri)
    if current is None:
        return None
    edited, before, after = current
    pair = _renamed(before, after)
    if pair is None:
        return None
    old, new = pair
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(old)}(?![A-Za-z0-9_])")
    order = list(range(cursor_line, min(len(lines), cursor_line + _AFTER_LINES)))
    order += list(range(cursor_line - 1, max(-1, cursor_line - _BEFORE_LINES), -1))
    for index in order:
        if index == edited:
            continue
        found = word.search(lines[index])
        if found:
            return NextEdit(index, found.start(), found.end(), new, RENAME_CONFIDENCE, "rename")
    return None


def model_prompt(history: EditHistory, lines: list[str], cursor_line: int, path: str) -> str:
    """The user message for the model predictor."""
    recent = [f"line {ln + 1}: {b!r} -> {a!r}" for _u, ln, b, a in history.done]
    start = max(0, cursor_line - _WINDOW)
    end = min(len(lines), cursor_line + _WINDOW + 1)
    numbered = "\n".join(f"{i + 1}: {lines[i]}" for i in range(start, end))
    edits = "\n".join(recent[-5:]) or "(none)"
    return f"Recent edits:\n{edits}\n\nFile {path}, cursor on line {cursor_line + 1}:\n{numbered}"


def parse_model_edit(raw: str, lines: list[str], cursor_line: int) -> NextEdit | None:
    """The model's answer as an edit, or None when it is not one we may offer."""
    match = re.search(r"\{.*\}", raw, re.DOTALL)
    if match is None:
        return None
    try:
        data = json.loads(match.group(0))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    line, old, new, confidence = (data.get(k) for k in ("line", "old", "new", "confidence"))
    if not (isinstance(line, int) and isinstance(old, str) and isinstance(new, str)):
        return None
    new = visible(new)
    if not isinstance(confidence, int | float) or not old or old == new:
        return None
    index = line - 1
    if not (max(0, cursor_line - _WINDOW) <= index < min(len(lines), cursor_line + _WINDOW + 1)):
        return None
    start = lines[index].find(old)
    if start < 0:
        return None
    return NextEdit(index, start, start + len(old), new, float(confidence), "model")


async def model_suggestion(
    chat: Provider, history: EditHistory, lines: list[str], cursor_line: int, path: str
) -> NextEdit | None:
    """Ask the chat model for the next edit (one short request)."""
    from driveros.llm import Request, system, user

    req = Request(
        messages=(system(_SYSTEM), user(model_prompt(history, lines, cursor_line, path))),
        max_tokens=200,
        temperature=0.0,
    )
    response = await chat.generate(req)
    return parse_model_edit(response.text(), lines, cursor_line)

"""Completions remembered by context, and reused while the user types what they suggest."""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

#: How much of the text before and after the cursor identifies a suggestion for reuse.
_TAIL = 256


@dataclass(frozen=True, slots=True)
class _Shown:
    uri: str
    prefix_len: int
    prefix_tail: str
    suffix_len: int
    suffix_head: str
    text: str


class SuggestionCache:
    """A bounded cache keyed by the request's context, plus the last suggestions shown.

    :meth:`reuse` answers without a model when the text typed since a suggestion was shown is
    the suggestion's own beginning (the rest of it is the answer).
    """

    def __init__(self, *, size: int = 256, recent: int = 16) -> None:
        self._size = size
        self._by_key: OrderedDict[str, str] = OrderedDict()
        self._shown: deque[_Shown] = deque(maxlen=recent)

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, key: str) -> str | None:
        text = self._by_key.get(key)
        if text is not None:
            self._by_key.move_to_end(key)
        return text

    def put(self, key: str, text: str) -> None:
        self._by_key[key] = text
        self._by_key.move_to_end(key)
        while len(self._by_key) > self._size:
            self._by_key.popitem(last=False)

    def shown(self, uri: str, prefix: str, suffix: str, text: str) -> None:
        """Remember that ``text`` was offered at the cursor between ``prefix`` and ``suffix``."""
        if text:
            self._shown.append(
                _Shown(uri, len(prefix), prefix[-_TAIL:], len(suffix), suffix[:_TAIL], text)
            )

    def reuse(self, uri: str, prefix: str, suffix: str) -> str | None:
        """The rest of a suggestion the user is typing through, or None."""
        for old in reversed(self._shown):
            if old.uri != uri or len(suffix) != old.suffix_len or len(prefix) < old.prefix_len:
                continue
            if not suffix.startswith(old.suffix_head):
                continue
            start = old.prefix_len - len(old.prefix_tail)
            if prefix[start : old.prefix_len] != old.prefix_tail:
                continue
            typed = prefix[old.prefix_len :]
            if old.text.startswith(typed) and len(typed) < len(old.text):
                return old.text[len(typed) :]
        return None

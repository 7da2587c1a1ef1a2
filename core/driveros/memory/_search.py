"""Recall ranking helpers: query words, FTS5 query building, reciprocal-rank fusion."""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence

#: The usual RRF constant: dampens the weight of top ranks so neither list dominates.
RRF_K = 60
_MAX_TERMS = 32
_STOPWORD_TEXT = """a an and are as at be by can could did do does for from had has have how i if
in into is it its me my no not of on or our s should so that the their them then there these they
this those to was we were what when where which who why will with would you your"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"\w+", re.UNICODE)


#: Posting budget of one lexical query. BM25 scores every row the MATCH yields, so common
#: words (which carry almost no BM25 weight anyway) are left out once the rarer words of the
#: query already reach this many rows; when even the rarest word is over it, all the words are
#: ranked over the newest this many facts.
POSTING_BUDGET = 3000


def query_words(text: str) -> list[str]:
    """The meaningful words of a query, lowercased, in order, without repeats."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) < 2 or word in _STOPWORDS:
            continue
        seen.setdefault(word, None)
        if len(seen) >= _MAX_TERMS:
            break
    return list(seen)


def fts_query(words: Sequence[str]) -> str | None:
    """An FTS5 MATCH expression: every word quoted (so it is never an operator), OR-ed."""
    return " OR ".join(f'"{w}"' for w in words) or None


def select_words(costs: Sequence[tuple[str, int]], budget: int = POSTING_BUDGET) -> list[str]:
    """The rarest words whose postings fit ``budget``, or ``[]`` when even the rarest is over.

    ``costs`` pairs each word with how many indexed rows contain it (a count may be capped at
    ``budget + 1``); unknown words (0) can match nothing and are dropped.
    """
    chosen: list[str] = []
    total = 0
    for word, cost in sorted((c for c in costs if c[1] > 0), key=lambda c: c[1]):
        if total + cost > budget:
            break
        chosen.append(word)
        total += cost
    return chosen


def pack(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def fuse(rankings: Sequence[Sequence[int]], limit: int) -> list[int]:
    """Reciprocal-rank fusion of several best-first id lists."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, fact_id in enumerate(ranking):
            scores[fact_id] = scores.get(fact_id, 0.0) + 1.0 / (RRF_K + rank + 1)
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))
    return [fact_id for fact_id, _ in ordered[:limit]]

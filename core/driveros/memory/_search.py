"""Recall ranking: FTS5 query building, an in-process vector index, reciprocal-rank fusion."""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: The usual RRF constant: dampens the weight of top ranks so neither list dominates.
RRF_K = 60
_MAX_TERMS = 32
_STOPWORD_TEXT = """a an and are as at be by can could did do does for from had has have how i if
in into is it its me my no not of on or our s should so that the their them then there these they
this those to was we were what when where which who why will with would you your"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression: every meaningful word quoted, OR-ed (BM25 ranks them)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) < 2 or word in _STOPWORDS:
            continue
        seen.setdefault(word, None)
        if len(seen) >= _MAX_TERMS:
            break
    if not seen:
        return None
    return " OR ".join(f'"{w}"' for w in seen)


def pack(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def unpack(blob: bytes) -> npt.NDArray[np.float32]:
    return np.frombuffer(blob, dtype=np.float32)


def normalized(vector: Sequence[float]) -> npt.NDArray[np.float32]:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


@dataclass(frozen=True)
class VectorIndex:
    """Unit vectors of the active facts of one scope, for one model, at one ``gen``."""

    gen: int
    model: str
    ids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]

    @classmethod
    def build(cls, gen: int, model: str, rows: Iterable[tuple[int, bytes]]) -> VectorIndex:
        ids: list[int] = []
        vecs: list[npt.NDArray[np.float32]] = []
        for fact_id, blob in rows:
            ids.append(fact_id)
            vecs.append(unpack(blob))
        if not vecs:
            return cls(gen, model, np.zeros(0, np.int64), np.zeros((0, 0), np.float32))
        matrix = np.vstack(vecs).astype(np.float32, copy=False)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return cls(gen, model, np.asarray(ids, np.int64), matrix / norms)

    def top(self, query: Sequence[float], k: int) -> list[int]:
        """Fact ids by cosine similarity to ``query``, best first."""
        if len(self.ids) == 0 or k <= 0:
            return []
        q = normalized(query)
        if q.shape[0] != self.matrix.shape[1]:
            return []
        scores = self.matrix @ q
        k = min(k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [int(i) for i in self.ids[best]]


def fuse(rankings: Sequence[Sequence[int]], limit: int) -> list[int]:
    """Reciprocal-rank fusion of several best-first id lists."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, fact_id in enumerate(ranking):
            scores[fact_id] = scores.get(fact_id, 0.0) + 1.0 / (RRF_K + rank + 1)
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))
    return [fact_id for fact_id, _ in ordered[:limit]]

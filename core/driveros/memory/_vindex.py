"""An in-process vector index that is updated in place: rows are added, replaced or removed
one fact at a time, so a write never forces a reload of every vector."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

#: Above this many vectors, a sign-bit (Hamming) pass picks candidates before exact cosine.
EXACT_LIMIT = 20_000
#: Candidates kept by the Hamming pass per requested result (then re-scored exactly).
OVERSAMPLE = 96
#: Seed of the fixed random rotation whose sign bits are kept beside the vector's own.
_ROTATION_SEED = 20_260_101
#: Removed rows are left in place (masked) until they are this share of the rows in use.
_COMPACT_SHARE = 0.25
_T = TypeVar("_T", bound=np.generic)


class VectorIndex:
    """Unit vectors of the active facts of one scope for one model, with a sketch of two
    sign bits per dimension kept beside each vector: the signs of the vector itself and of
    its projections on a fixed set of orthogonal random hyperplanes (see ``_rotation``).

    ``seq`` is the high-water mark of the ``index_log`` rows already applied. Up to
    ``EXACT_LIMIT`` live vectors, cosine similarity is computed against all of them. Beyond,
    reading the whole float matrix per query no longer fits the latency budget, so the
    sketches are compared first (Hamming distance, 16x less memory) and the best
    ``OVERSAMPLE * k`` candidates are re-scored exactly: approximate, as docs/memory.md says.
    Twice the bits of a plain sign sketch find far more of the true neighbours for the same
    number of candidates (measured in bench/bench_memory.py).

    Not thread-safe: the owner serializes every call.
    """

    def __init__(self, model: str, dim: int, seq: int = 0) -> None:
        self.model = model
        self.dim = dim
        self.seq = seq
        words = 2 * ((dim + 63) // 64)
        self._rotation = _rotation(dim)
        self._ids: npt.NDArray[np.int64] = np.zeros(0, np.int64)
        self._matrix: npt.NDArray[np.float32] = np.zeros((0, dim), np.float32)
        #: Transposed (word, row): the Hamming pass reads one contiguous word column at a time.
        self._bits: npt.NDArray[np.uint64] = np.zeros((words, 0), np.uint64)
        self._live: npt.NDArray[np.bool_] = np.zeros(0, np.bool_)
        self._size = 0
        self._row: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, fact_id: object) -> bool:
        return fact_id in self._row

    def ids(self) -> list[int]:
        return sorted(self._row)

    # ------------------------------------------------------------------ updates

    def upsert(self, rows: Iterable[tuple[int, bytes]]) -> None:
        """Add or replace vectors; a blob of another dimension removes that fact instead."""
        fresh_ids: list[int] = []
        fresh: list[bytes] = []
        stale: list[int] = []
        width = self.dim * 4
        for fact_id, blob in rows:
            if len(blob) != width:
                stale.append(fact_id)
            elif fact_id in self._row:
                self._put(self._row[fact_id], blob)
            else:
                fresh_ids.append(fact_id)
                fresh.append(blob)
        self.remove(stale)
        if fresh:
            self._append(fresh_ids, fresh)

    def remove(self, fact_ids: Iterable[int]) -> None:
        for fact_id in fact_ids:
            row = self._row.pop(fact_id, None)
            if row is not None:
                self._live[row] = False
        dead = self._size - len(self._row)
        if dead > 64 and dead > _COMPACT_SHARE * self._size:
            self._compact()

    def _put(self, row: int, blob: bytes) -> None:
        unit = _unit(np.frombuffer(blob, np.float32).reshape(1, -1))
        self._matrix[row] = unit[0]
        self._bits[:, row] = self._sketch(unit)[:, 0]
        self._live[row] = True

    def _append(self, fact_ids: list[int], blobs: list[bytes]) -> None:
        count = len(blobs)
        self._reserve(self._size + count)
        # One buffer for all rows: much faster than stacking many small arrays.
        unit = _unit(np.frombuffer(b"".join(blobs), np.float32).reshape(count, self.dim))
        end = self._size + count
        self._matrix[self._size : end] = unit
        self._bits[:, self._size : end] = self._sketch(unit)
        self._ids[self._size : end] = fact_ids
        self._live[self._size : end] = True
        self._row.update(zip(fact_ids, range(self._size, end), strict=True))
        self._size = end

    def _reserve(self, needed: int) -> None:
        capacity = len(self._ids)
        if needed <= capacity:
            return
        grown = max(needed + needed // 8, capacity + capacity // 2, 64)
        self._ids = _grow(self._ids, grown)
        self._matrix = _grow(self._matrix, grown)
        self._live = _grow(self._live, grown)
        bits = np.zeros((self._bits.shape[0], grown), np.uint64)
        bits[:, : self._size] = self._bits[:, : self._size]
        self._bits = bits

    def _compact(self) -> None:
        keep = np.flatnonzero(self._live[: self._size])
        self._ids = self._ids[keep]
        self._matrix = self._matrix[keep]
        self._bits = np.ascontiguousarray(self._bits[:, keep])
        self._live = np.ones(len(keep), np.bool_)
        self._size = len(keep)
        self._row = {int(i): r for r, i in enumerate(self._ids)}

    # ------------------------------------------------------------------ queries

    def top(self, query: Sequence[float], k: int, *, exact: bool = False) -> list[int]:
        """Fact ids by cosine similarity to ``query``, best first (``exact`` skips the bit
        pass, for measuring it)."""
        if not self._row or k <= 0 or len(query) != self.dim:
            return []
        q = _unit(np.asarray(query, np.float32).reshape(1, -1))[0]
        n = self._size
        dead = len(self._row) < n
        rows: npt.NDArray[np.intp] | None = None
        wanted = OVERSAMPLE * k
        if not exact and len(self._row) > EXACT_LIMIT and len(self._row) > wanted:
            distance = self._hamming(q)
            if dead:
                distance[~self._live[:n]] = 64 * len(self._bits) + 1  # beyond any real one
            rows = _nearest(distance, wanted)
            scores = _dot(self._matrix[rows], q)
            if dead:
                scores[~self._live[rows]] = -np.inf
        else:
            scores = _dot(self._matrix[:n], q)
            if dead:
                scores[~self._live[:n]] = -np.inf
        k = min(k, len(self._row), len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best], kind="stable")]
        best = best[np.isfinite(scores[best])]
        if rows is not None:
            best = rows[best]
        return [int(i) for i in self._ids[best]]

    def _hamming(self, q: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
        qbits = self._sketch(q.reshape(1, -1))[:, 0]
        n = self._size
        distance: npt.NDArray[np.uint16] = np.bitwise_count(self._bits[0, :n] ^ qbits[0]).astype(
            np.uint16
        )
        for word in range(1, len(qbits)):
            distance += np.bitwise_count(self._bits[word, :n] ^ qbits[word])
        return distance

    def _sketch(self, unit: npt.NDArray[np.float32]) -> npt.NDArray[np.uint64]:
        """Sign bits of the rows and of the rotated rows, as (word, row)."""
        if len(unit) > 256:
            turned = unit @ self._rotation  # large: BLAS pays for its threads
        else:
            turned = np.einsum("ij,jk->ik", unit, self._rotation)  # small: no thread fan-out
        return np.vstack([_sign_bits(unit), _sign_bits(turned)])


def _nearest(distance: npt.NDArray[np.uint16], wanted: int) -> npt.NDArray[np.intp]:
    """The ``wanted`` rows of smallest distance, in row order (ties broken by row): a counting
    select over the few possible distances, several times faster than ``argpartition``."""
    cumulative = np.cumsum(np.bincount(distance))
    cut = int(np.searchsorted(cumulative, wanted))
    rows = np.flatnonzero(distance <= cut)
    if len(rows) > wanted:
        at_cut = np.flatnonzero(distance[rows] == cut)
        rows = np.delete(rows, at_cut[len(at_cut) - (len(rows) - wanted) :])
    return rows


def _rotation(dim: int) -> npt.NDArray[np.float32]:
    """Fixed hyperplanes (the same in every process): ``dim`` randomly chosen rows of a
    Hadamard matrix with random signs, cut to ``dim`` columns. Their normals are orthogonal
    (exactly when ``dim`` is a power of two), which keeps the extra bits independent of the
    vector's own signs: measured, this finds about 7 points more of the true top 8 than
    Gaussian hyperplanes. A QR factorization would do the same but takes seconds at 1,536
    dimensions on a busy machine."""
    size = 1
    while size < dim:
        size *= 2
    rng = np.random.default_rng(_ROTATION_SEED)
    rows = rng.permutation(size)[:dim].astype(np.uint32)
    signs = rng.choice(np.array([-1.0, 1.0], np.float32), size=dim)
    # Sylvester's Hadamard matrix: entry (i, j) is -1 exactly when i & j has odd parity.
    parity = np.bitwise_count(rows[:, None] & np.arange(dim, dtype=np.uint32)[None, :]) & 1
    return np.ascontiguousarray(signs[:, None] * (1.0 - 2.0 * parity), dtype=np.float32)


def _grow(array: npt.NDArray[_T], capacity: int) -> npt.NDArray[_T]:
    out: npt.NDArray[_T] = np.zeros((capacity, *array.shape[1:]), array.dtype)
    out[: len(array)] = array
    return out


def _unit(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32, copy=False)
    return out


def _dot(matrix: npt.NDArray[np.float32], q: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Matrix-vector product without BLAS: OpenBLAS spreads even small products over threads,
    which on a busy machine costs far more than the arithmetic (measured: 28 ms vs 0.25 ms for
    2,048 x 256)."""
    out: npt.NDArray[np.float32] = np.einsum("ij,j->i", matrix, q)
    return out


def _sign_bits(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.uint64]:
    """One bit per dimension (positive or not), padded to whole 64-bit words, as (word, row)."""
    packed = np.packbits(matrix > 0, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    words = np.ascontiguousarray(packed).view(np.uint64)
    return np.ascontiguousarray(words.T)

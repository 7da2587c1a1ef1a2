"""Acceptance counts of inline suggestions per model, kept in the state directory only.

``inline-acceptance.json`` maps ``"<provider>/<model>"`` to ``{"shown": n, "accepted": m}``:
what the eval harness reads to compute an acceptance rate per model from real use. Nothing
leaves the machine; no text of a suggestion is stored.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

FILE_NAME = "inline-acceptance.json"
_FLUSH_EVERY = 50


def acceptance_path() -> Path:
    from driveros.state import state_dir

    return state_dir() / FILE_NAME


def read_counts(path: Path) -> dict[str, dict[str, int]]:
    """The stored counts ({} when absent or unreadable). Blocking."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, dict[str, int]] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out[str(key)] = {
                k: int(v)
                for k, v in value.items()
                if k in ("shown", "accepted") and isinstance(v, int)
            }
    return out


class AcceptanceCounts:
    """Counts in memory; :meth:`flush` adds them to the file (atomically)."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._pending: dict[str, dict[str, int]] = {}
        self._unflushed = 0

    def _bump(self, model: str, kind: str) -> None:
        row = self._pending.setdefault(model, {"shown": 0, "accepted": 0})
        row[kind] += 1
        self._unflushed += 1

    def shown(self, model: str) -> bool:
        """Count one suggestion shown; True when the counts should be flushed."""
        self._bump(model, "shown")
        return self._unflushed >= _FLUSH_EVERY

    def accepted(self, model: str) -> None:
        self._bump(model, "accepted")

    def flush(self) -> None:
        """Merge the pending counts into the file. Blocking."""
        if not self._pending:
            return
        pending, self._pending, self._unflushed = self._pending, {}, 0
        path = self._path or acceptance_path()
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            counts = read_counts(path)
            for model, row in pending.items():
                have = counts.setdefault(model, {"shown": 0, "accepted": 0})
                for kind, n in row.items():
                    have[kind] = have.get(kind, 0) + n
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".inline-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(counts, fh, sort_keys=True)
            Path(tmp).replace(path)
        except OSError as exc:
            logger.warning("inline: cannot record acceptance counts in %s: %s", path, exc)

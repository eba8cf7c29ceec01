"""Learned definition scores kept in the data folder, so a restart does not re-embed unchanged tools.

One SQLite file next to the search's vector cache, ``<data>/search/definition-scores.sqlite3``
(folder 0700, file 0600; stdlib :mod:`sqlite3`, WAL, so several processes may share it), one row
per (probe version, definition hash): the best unit's score, path and text
(:class:`registry.safety.LearnedScore`) or ``NULL`` for a definition without text. The probe
version (:attr:`registry.safety.LinearProbe.version`) covers the embedder's ``model_id`` and the
probe's weights and threshold, so a new model or a retrained probe never reads old scores; rows of
other versions are deleted when the file is opened.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from registry.safety import LearnedScore

__all__ = ["ScoreCache"]

FILE_NAME = "definition-scores.sqlite3"

_SCHEMA = """CREATE TABLE IF NOT EXISTS scores (
    probe TEXT NOT NULL, definition_hash TEXT NOT NULL,
    score REAL, path TEXT, text TEXT, threshold REAL,
    PRIMARY KEY (probe, definition_hash))"""


class ScoreCache:
    """The :class:`host.store.pin_safety.SavedScores` of one probe version in ``folder``.

    Args:
        folder: created 0700 when missing (``<data>/search``).
        probe_version: :attr:`registry.safety.LinearProbe.version`.

    Raises:
        sqlite3.Error / OSError: the file cannot be created or opened.

    Thread-safe (one connection under a lock; the pin store calls it from its worker thread).
    """

    def __init__(self, folder: Path, probe_version: str) -> None:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = folder / FILE_NAME
        self.path.touch(mode=0o600, exist_ok=True)
        self.path.chmod(0o600)  # also a file made under an older umask
        self.version = probe_version
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=10, check_same_thread=False, isolation_level=None)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._db.execute("DELETE FROM scores WHERE probe != ?", (probe_version,))

    def get_many(self, hashes: Iterable[str]) -> dict[str, LearnedScore | None]:
        """The saved scores of those ``hashes`` that have one (``None``: scored, no text)."""
        wanted = list(hashes)
        out: dict[str, LearnedScore | None] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT definition_hash, score, path, text, threshold FROM scores "
                    f"WHERE probe = ? AND definition_hash IN ({marks})", (self.version, *chunk))
                for h, score, path, text, threshold in rows:
                    out[h] = None if score is None else LearnedScore(score, path, text, threshold)
        return out

    def put_many(self, scores: Mapping[str, LearnedScore | None]) -> None:
        """Save ``scores`` (by definition hash) in one transaction."""
        rows = [(self.version, h, *((s.score, s.path, s.text, s.threshold) if s else (None, None, None, None)))
                for h, s in scores.items()]
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?, ?)", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM scores WHERE probe = ?", (self.version,)).fetchone()[0])

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()


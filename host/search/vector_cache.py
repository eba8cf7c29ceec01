"""Tool vectors cached in the data folder, so a restart or a reconnect does not re-embed.

One append-only file per model, ``<data>/search/vectors-<model>.bin``: fixed-size records of a
32-byte key (SHA-256 of model id + tool text, ``registry.search.dense.text_key``) and ``dim``
little-endian float32s. A torn last record (crash mid-write) is ignored. The file is memory-mapped
for reading, so it costs page cache rather than heap. ``compact(keep)`` rewrites it atomically
with only the given keys (bounded size: the worker compacts when dead records outnumber live ones).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

__all__ = ["VectorCache"]

_KEY = 32


class VectorCache:
    """Args: folder (created 0700 when missing), model id (part of the file name), vector dim."""

    def __init__(self, folder: Path, model_id: str, dim: int) -> None:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
        self.path = folder / f"vectors-{safe}.bin"
        self.dim = dim
        self._dtype = np.dtype([("key", f"V{_KEY}"), ("vec", "<f4", (dim,))])
        self._rows: dict[bytes, int] = {}
        self._map: np.ndarray | None = None
        self._mapped_rows = 0
        self._reload()

    def _reload(self) -> None:
        size = self.path.stat().st_size if self.path.exists() else 0
        n = size // self._dtype.itemsize
        if n == self._mapped_rows and self._map is not None:
            return
        self._map = np.memmap(self.path, dtype=self._dtype, mode="r", shape=(n,)) if n else None
        self._rows = {}
        if n:
            keys = self._map["key"]
            for i in range(n):
                self._rows[keys[i].tobytes()] = i
        self._mapped_rows = n

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: bytes) -> bool:
        return key in self._rows

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Cached vectors of those ``keys`` that have one (copies, float32)."""
        out = {}
        for k in keys:
            i = self._rows.get(k)
            if i is not None and self._map is not None:
                out[k] = np.array(self._map["vec"][i], dtype=np.float32)
        return out

    def put_many(self, items: Iterable[tuple[bytes, np.ndarray]]) -> int:
        """Append vectors for keys not cached yet; returns how many were written."""
        recs = [(k, v) for k, v in items if k not in self._rows]
        if not recs:
            return 0
        arr = np.zeros(len(recs), dtype=self._dtype)
        for i, (k, v) in enumerate(recs):
            if len(k) != _KEY:
                raise ValueError(f"cache key must be {_KEY} bytes, got {len(k)}")
            arr[i]["key"] = k
            arr[i]["vec"] = v
        size = self.path.stat().st_size if self.path.exists() else 0
        whole = size - size % self._dtype.itemsize
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.ftruncate(fd, whole)  # drop a torn record left by a crash
            os.lseek(fd, whole, os.SEEK_SET)
            os.write(fd, arr.tobytes())
        finally:
            os.close(fd)
        self._mapped_rows = -1
        self._reload()
        return len(recs)

    def compact(self, keep: Iterable[bytes]) -> int:
        """Rewrite the file with only ``keep``'s records (atomic rename); returns records kept."""
        wanted = [k for k in dict.fromkeys(keep) if k in self._rows]
        vecs = self.get_many(wanted)
        arr = np.zeros(len(wanted), dtype=self._dtype)
        for i, k in enumerate(wanted):
            arr[i]["key"] = k
            arr[i]["vec"] = vecs[k]
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, arr.tobytes())
            os.fsync(fd)
        finally:
            os.close(fd)
        self._map = None
        os.replace(tmp, self.path)
        self._mapped_rows = -1
        self._reload()
        return len(wanted)

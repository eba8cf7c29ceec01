"""Verified API keys remembered per access revision, so a request with a known key costs no
database read and no thread hop (a key check on every request).

Verifying a bearer key the slow way (:meth:`host.access.AccessControl.authenticate`) reads the key
row and the user's roles on a worker thread. :class:`VerifiedKeys` remembers a *successful*
verification under the SHA-256 of the token together with the access revision
(``meta.revision``) read **before** that verification. The revision changes with every key,
user, role, grant and pin change (:func:`host.store.db.bump_revision`), in this process, another
replica or the CLI, so:

* a revoked key, a deleted user or a changed role takes effect on the next request (the cached
  entry's revision no longer matches the current one, which is read on every request: ~3 µs on
  SQLite, one prepared SELECT on PostgreSQL);
* a revocation that lands while a slow verification runs is never hidden: that entry carries the
  older revision and misses at once.

Entries also expire after :data:`host.store.keys.LAST_USED_RESOLUTION_SECONDS`, so the key's
``last_used_at`` keeps its resolution (the slow path writes it). Failures are never cached: a bad
key always takes the slow path (constant-time comparison, aggregated audit row). At most
``max_entries`` tokens are remembered (the oldest half is dropped when full); tokens themselves
are not kept, only their digests.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict

from host.store.keys import LAST_USED_RESOLUTION_SECONDS
from registry.policy import Principal

__all__ = ["VerifiedKeys"]


class VerifiedKeys:
    """Successful key verifications by ``(sha256(token), revision)`` (see module docstring).

    Args:
        max_entries: most tokens remembered.
        ttl_seconds: how long one verification is reused (seconds).

    Thread-safe.
    """

    def __init__(self, *, max_entries: int = 4096, ttl_seconds: float = LAST_USED_RESOLUTION_SECONDS) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._entries: OrderedDict[bytes, tuple[int, float, Principal]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def digest(token: str) -> bytes:
        return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()

    def get(self, token: str, revision: int) -> Principal | None:
        """The principal verified for ``token`` at ``revision`` (within the TTL), else ``None``."""
        key = self.digest(token)
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            rev, at, principal = hit
            if rev != revision or time.monotonic() - at >= self.ttl_seconds:
                del self._entries[key]
                return None
            return principal

    def put(self, token: str, revision: int, principal: Principal) -> None:
        """Remember that ``token`` verified as ``principal``; ``revision`` must have been read
        before the verification started."""
        key = self.digest(token)
        with self._lock:
            if key not in self._entries and len(self._entries) >= self.max_entries:
                for _ in range(max(1, self.max_entries // 2)):
                    self._entries.popitem(last=False)
            self._entries[key] = (revision, time.monotonic(), principal)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

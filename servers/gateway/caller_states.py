"""Idle-expiring keys of stateless taint sessions, bounded per caller so one caller cannot push
out another's (the gateway's side of :class:`registry.safety.TaintTracker`'s bounds).

A 2026-07-28 client picks its taint session with ``_meta["toolhost/session"]``
(:mod:`servers.gateway.caller_scope`), so one API key can name any number of sessions. Each key
``caller:<user>:<key id>[:<conversation>]`` belongs to its caller ``caller:<user>:<key id>``
(:func:`registry.safety.owner_of`):

* a key unused for ``ttl_seconds`` **expires**: ``on_expire(key)`` (the taint session ends, as
  documented: forgotten after idle minutes);
* a caller holding more than ``per_caller`` keys loses its own least recently used one, and more
  than ``size`` keys in all lose the least recently used of the caller holding the most:
  ``on_evict(key)``. An evicted key is only forgotten here; its taint stays with the tracker,
  which bounds itself without dropping a tainted session silently.

``clock`` is monotonic seconds. O(1) per :meth:`CallerKeys.touch` apart from expiry and the rare
global overflow (O(callers)).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from registry.safety import owner_of

__all__ = ["CallerKeys"]


class CallerKeys:
    """Live session keys (see module docstring).

    Raises:
        ValueError: a bound below 1.
    """

    def __init__(self, *, ttl_seconds: float, on_expire: Callable[[str], None],
                 on_evict: Callable[[str], None], per_caller: int = 256, size: int = 65_536,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if per_caller < 1 or size < 1:
            raise ValueError(f"per_caller and size must be at least 1, got {per_caller} and {size}")
        self.ttl_seconds, self.per_caller, self.size = ttl_seconds, per_caller, size
        self._on_expire, self._on_evict, self._clock = on_expire, on_evict, clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._callers: dict[str, OrderedDict[str, None]] = {}

    def touch(self, key: str) -> None:
        """Mark ``key`` used now (adding it, and evicting for room)."""
        now = self._clock()
        self._expire(now)
        owner = owner_of(key)
        mine = self._callers.setdefault(owner, OrderedDict())
        self._seen[key] = now
        self._seen.move_to_end(key)
        mine[key] = None
        mine.move_to_end(key)
        if len(mine) > self.per_caller:
            self._evict(next(iter(mine)))
        if len(self._seen) > self.size:
            biggest = max(self._callers.values(), key=len)
            self._evict(next(k for k in biggest if k != key) if len(biggest) > 1 else next(iter(self._seen)))

    def of(self, caller: str) -> list[str]:
        """The live keys of ``caller`` (``caller:<user>:<key id>``), least recently used first."""
        self._expire(self._clock())
        return list(self._callers.get(caller, ()))

    def __len__(self) -> int:
        return len(self._seen)

    def _expire(self, now: float) -> None:
        while self._seen:
            key, seen = next(iter(self._seen.items()))
            if now - seen < self.ttl_seconds:
                return
            self._forget(key)
            self._on_expire(key)

    def _evict(self, key: str) -> None:
        self._forget(key)
        self._on_evict(key)

    def _forget(self, key: str) -> None:
        self._seen.pop(key, None)
        owner = owner_of(key)
        mine = self._callers.get(owner)
        if mine is not None:
            mine.pop(key, None)
            if not mine:
                del self._callers[owner]

"""Fair admission to the sandbox pool: a per-caller share, a bounded queue and a bounded wait.

One caller must not fill the pool. :class:`Admission` hands out the pool's ``max_workers`` slots:

* a caller (an owner key, :func:`owner_key`) holds at most ``max_scripts_per_caller`` scripts,
  running or waiting; one more is refused at once (``rate_limited``). A caller is its API key; an
  anonymous caller (open access, ``--auth off``: no key) is its session, so one hostile anonymous
  client does not use up every other anonymous client's share;
* all anonymous sessions together hold at most ``max_anonymous_scripts`` scripts, running or
  waiting (default: the pool size plus the queue bound), so opening many sessions does not buy more;
  one more is refused at once (``rate_limited``);
* when every slot is taken a script waits in one first-come queue of at most
  ``max_queued_scripts``; a full queue refuses at once (``rate_limited``);
* a queued script waits at most ``checkout_timeout_seconds``, then fails (``busy``: "waited N s for a
  sandbox worker; the pool (size P) is busy; retry after R s").

``retry_after`` (seconds) is when a slot frees at the latest: the soonest end of the wall clock of
the running scripts that matter (the caller's own when it is over its share, anyone's otherwise),
at least 1 s. A script's wall clock starts when it gets its slot (:mod:`host.code_mode.pool`).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from registry.policy import Principal

__all__ = ["SESSION_OWNER", "Admission", "Refused", "owner_key"]

SESSION_OWNER = "session:"
"""Prefix of an anonymous session's owner key (these count against the anonymous cap too)."""


def owner_key(principal: Principal, session_id: str | None = None) -> str:
    """Whose share a script counts against: ``key:<key id>`` when the caller has an API key; else,
    with the client session's id (``Mcp-Session-Id``, a stdio connection, a 2026-07-28 client
    connection), ``session:<user>:<session id>``; else ``user:<user>``."""
    if principal.key_id:
        return f"key:{principal.key_id}"
    return f"{SESSION_OWNER}{principal.user}:{session_id}" if session_id else f"user:{principal.user}"


class Refused(Exception):
    """A script was not admitted: ``status`` (``rate_limited`` or ``busy``), ``message`` (what and how
    to fix it) and ``retry_after`` (seconds)."""

    def __init__(self, status: str, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.status, self.message, self.retry_after = status, message, retry_after


@dataclass(eq=False)
class _Waiter:
    owner: str
    granted: anyio.Event = field(default_factory=anyio.Event)
    slot: object = None


class Admission:
    """The slots of one pool (module doc). Single event loop; not thread-safe.

    Args:
        slots: the pool size (``max_workers``).
        per_caller: most scripts one owner holds, running or waiting (``max_scripts_per_caller``).
        max_queued: most scripts waiting for a slot (``max_queued_scripts``).
        wait_seconds: longest wait for a slot (``checkout_timeout_seconds``).
        wall_clock_seconds: a running script's longest hold of a slot (for ``retry_after``).
        max_anonymous: most scripts all anonymous sessions hold together (``max_anonymous_scripts``;
            ``None``: ``slots + max_queued``).
    """

    def __init__(
        self, slots: int, per_caller: int, max_queued: int, wait_seconds: float, wall_clock_seconds: float,
        max_anonymous: int | None = None,
    ) -> None:
        self.slots, self.per_caller, self.max_queued = slots, per_caller, max_queued
        self.max_anonymous = slots + max_queued if max_anonymous is None else max_anonymous
        self.wait_seconds, self.wall_clock_seconds = wait_seconds, wall_clock_seconds
        self._running: dict[object, tuple[str, float]] = {}  # slot -> (owner, when it was granted)
        self._queue: deque[_Waiter] = deque()

    @property
    def running(self) -> int:
        """Scripts holding a slot now."""
        return len(self._running)

    @property
    def queued(self) -> int:
        """Scripts waiting for a slot now."""
        return len(self._queue)

    def held(self, owner: str) -> int:
        """Scripts ``owner`` has running or waiting."""
        return Counter(o for o, _ in self._running.values())[owner] + sum(1 for w in self._queue if w.owner == owner)

    @property
    def anonymous(self) -> int:
        """Scripts anonymous sessions have running or waiting, all together."""
        owners = [o for o, _ in self._running.values()] + [w.owner for w in self._queue]
        return sum(1 for o in owners if o.startswith(SESSION_OWNER))

    @asynccontextmanager
    async def slot(self, owner: str) -> AsyncIterator[None]:
        """Hold one slot for ``owner`` for the block; raises :class:`Refused` when not admitted."""
        held = self.held(owner)
        if held >= self.per_caller:
            raise Refused(
                "rate_limited",
                f"this caller already has {held} script(s) running or waiting; one caller may run at most"
                f" {self.per_caller} at once (toolhost.code_mode.pool.max_scripts_per_caller = {self.per_caller})"
                " so that others get a sandbox worker too; wait for a script to finish, or ask an operator to"
                " raise the share",
                self._retry_after(owner),
            )
        if owner.startswith(SESSION_OWNER) and (anonymous := self.anonymous) >= self.max_anonymous:
            raise Refused(
                "rate_limited",
                f"anonymous sessions already have {anonymous} script(s) running or waiting; together they may run"
                f" at most {self.max_anonymous} (toolhost.code_mode.pool.max_anonymous_scripts ="
                f" {self.max_anonymous}); retry after the time given, or use an API key for a share of your own",
                self._retry_after(None),
            )
        slot = self._grant(owner) if len(self._running) < self.slots and not self._queue else await self._wait(owner)
        try:
            yield
        finally:
            self._release(slot)

    async def _wait(self, owner: str) -> object:
        if len(self._queue) >= self.max_queued:
            raise Refused(
                "rate_limited",
                f"the sandbox pool (size {self.slots}) is busy and {len(self._queue)} script(s) already wait for a"
                f" worker (toolhost.code_mode.pool.max_queued_scripts = {self.max_queued}); retry after the time given",
                self._retry_after(None),
            )
        waiter = _Waiter(owner)
        self._queue.append(waiter)
        began = anyio.current_time()
        try:
            with anyio.move_on_after(self.wait_seconds):
                await waiter.granted.wait()
        except BaseException:  # cancelled from outside: give back a slot handed over meanwhile
            self._leave(waiter)
            raise
        if not waiter.granted.is_set():
            self._leave(waiter)
            waited = anyio.current_time() - began
            retry = self._retry_after(None)
            raise Refused(
                "busy",
                f"waited {waited:.1f} s for a sandbox worker; the pool (size {self.slots}) is busy; retry after"
                f" {retry:g} s (toolhost.code_mode.pool.checkout_timeout_seconds = {self.wait_seconds:g})",
                retry,
            )
        return waiter.slot

    def _leave(self, waiter: _Waiter) -> None:
        if waiter.granted.is_set():
            self._release(waiter.slot)
        else:
            self._queue.remove(waiter)

    def _grant(self, owner: str) -> object:
        slot = object()
        self._running[slot] = (owner, anyio.current_time())
        return slot

    def _release(self, slot: object) -> None:
        """Free ``slot``; hand it to the first queued script (first come, first served)."""
        del self._running[slot]
        if self._queue and len(self._running) < self.slots:
            waiter = self._queue.popleft()
            waiter.slot = self._grant(waiter.owner)
            waiter.granted.set()

    def _retry_after(self, owner: str | None) -> float:
        """Seconds until the soonest wall-clock end of ``owner``'s running scripts (anyone's when None)."""
        now = anyio.current_time()
        ends = [t + self.wall_clock_seconds - now for o, t in self._running.values() if owner is None or o == owner]
        return float(max(1, math.ceil(min(ends, default=1.0))))

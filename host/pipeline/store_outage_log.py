"""One log line per permission-store outage window, and one when the store is back.

While the permission store is down (PostgreSQL stopped, the SQLite file locked, full or
read-only) every request that needs it fails the same way; a traceback per request (or per check
of a watcher) would bury the log. Every place that meets a store failure - the call pipeline's
authorize stage, the console's approval watcher, the gateway's error boundary and the HTTP guard
- reports it to :data:`STORE_OUTAGE_LOG` instead, which writes at most one ``ERROR`` line per
:data:`LOG_INTERVAL_SECONDS` per process::

    toolhost: permission store unavailable (unreachable; OperationalError at authorize); answering
    the store-outage error until it is back (1 failure in the last 30 s)

and one ``WARNING`` line once a later store access succeeds::

    toolhost: permission store available again after 12.4 s (37 failures)

The line names the failure's kind (:func:`store_reason`) and exception class, never the driver's
text, the database host or a password. Failures that are not store failures keep their traceback.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy.exc import DBAPIError

from host.access.audit_writer import outage_reason
from host.store import AuditUnavailable, DatabaseUnavailable

__all__ = ["LOG_INTERVAL_SECONDS", "STORE_OUTAGE_LOG", "StoreOutageLog", "find_store_error", "store_reason"]

LOG_INTERVAL_SECONDS = 30.0
"""At most one outage line per this many seconds per process."""

_log = logging.getLogger("toolhost.serve")


def find_store_error(exc: BaseException) -> BaseException | None:
    """The store error behind ``exc`` (itself, inside an exception group, or its cause), else ``None``."""
    if isinstance(exc, (DatabaseUnavailable, AuditUnavailable, DBAPIError)):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = find_store_error(inner)
            if found is not None:
                return found
    cause = exc.__cause__ or exc.__context__
    return find_store_error(cause) if cause is not None and cause is not exc else None


def store_reason(error: BaseException) -> str:
    """``unreachable``, ``locked by another writer``, ``disk full``, ``read-only`` or ``write failed``."""
    return "unreachable" if isinstance(error, DatabaseUnavailable) else outage_reason(error)


class StoreOutageLog:
    """The rate-limited outage/recovery lines (module docstring); thread-safe.

    Args:
        interval: seconds between two outage lines (default :data:`LOG_INTERVAL_SECONDS`).
        clock: monotonic seconds (``time.monotonic``; tests pass their own).
    """

    def __init__(self, interval: float = LOG_INTERVAL_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None  # start of the current outage, None while the store works
        self._announced = False  # an outage line was written for the current outage
        self._last_line = float("-inf")
        self._failed_window = 0
        self._failed_total = 0

    @property
    def down(self) -> bool:
        """Whether an outage was noted and no store access has succeeded since."""
        return self._since is not None

    def note(self, error: BaseException, where: str) -> bool:
        """Count one failed store access caused by ``error`` at stage ``where``; log the outage line when due.

        Returns:
            Whether a line was written.
        """
        now = self._clock()
        with self._lock:
            if self._since is None:
                self._since = now
                self._failed_total = 0
            self._failed_window += 1
            self._failed_total += 1
            if now - self._last_line < self.interval:
                return False
            self._last_line, failed, self._failed_window, self._announced = now, self._failed_window, 0, True
        _log.error("toolhost: permission store unavailable (%s; %s at %s); answering the store-outage error "
                   "until it is back (%d failure%s in the last %g s)", store_reason(error), type(error).__name__,
                   where, failed, "" if failed == 1 else "s", self.interval)
        return True

    def recovered(self) -> bool:
        """Note a successful store access; log the recovery line if the outage was logged.

        A store that flaps (reads work, writes fail) writes at most one outage and one recovery line
        per interval: the interval between outage lines is kept across recoveries.

        Returns:
            Whether a line was written (only the first success after a logged outage writes one).
        """
        if self._since is None:  # the common path: no lock, no work
            return False
        with self._lock:
            if self._since is None:
                return False
            lasted, failed, announced = self._clock() - self._since, self._failed_total, self._announced
            self._since, self._failed_window, self._announced = None, 0, False
        if not announced:
            return False
        _log.warning("toolhost: permission store available again after %.1f s (%d failure%s)", lasted, failed,
                     "" if failed == 1 else "s")
        return True


STORE_OUTAGE_LOG = StoreOutageLog()
"""The process's one outage log (the pipeline, the console watcher and the gateway share it)."""

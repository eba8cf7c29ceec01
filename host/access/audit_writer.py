"""Audit write-behind: rows are committed on the event loop when that is instant, else queued
and written in batches by one thread.

Two paths, chosen per row (the audit write is on every call's path):

* **inline** (``commit`` durability, a SQLite file database, nothing queued for the thread): the
  row is committed right on the event loop through :meth:`host.store.AuditLog.try_record_many`,
  which never waits: a one-row transaction on a plain ``sqlite3`` connection costs tens of
  microseconds, less than the two thread hops it replaces. When another connection or process
  holds the database write lock, or the write fails, the row takes the thread path instead.
* **thread**: a request puts its row on a bounded queue and one writer thread writes whatever has
  queued up in a single transaction (:meth:`host.store.AuditLog.record_many`); concurrent requests
  share commits. While rows wait for the thread, later rows queue behind them (never inline), so
  rows are committed in the order they were written.

WAL checkpoints (an ``fsync``) never run on the event loop: after many inline commits the writer
thread runs one (:meth:`host.store.AuditLog.checkpoint`).

Guarantees (a "crash" is the serve *process* dying: SIGKILL, OOM kill, segfault; the database is
SQLite in WAL mode with ``synchronous=NORMAL``, so a committed transaction survives a process
crash but the last commits may be lost on power loss or an OS crash):

* ``durability="commit"`` (default, :data:`DEFAULT_DURABILITY`): :meth:`AuditWriter.write`
  returns only once the row's batch is committed, and the registry server answers a call only
  after that. So **every call a client got an answer for has its audit row, whatever happens to
  the process afterwards**. Batching still applies: rows of concurrent requests share a commit.
* ``durability="interval"``: :meth:`AuditWriter.write` returns at once; the writer commits within
  ``flush_interval_seconds`` (plus the time of one write) of a row being queued. A process crash
  may lose at most the rows queued in that last window; nothing else.
* Either way, an orderly shutdown (SIGINT/SIGTERM → :meth:`AuditWriter.close`) writes every
  queued row before the process exits; rows are written in the order they were queued; at most
  ``max_pending`` rows wait in memory (a full queue makes the next writer wait for room; no row
  is ever dropped); a failing write is retried (``RETRY_DELAYS_SECONDS``), then raised to the
  requests waiting on it as :class:`host.store.AuditUnavailable` (no driver text) **and kept**:
  the writer goes on retrying the batch (every :data:`OUTAGE_RETRY_SECONDS`) until the store takes
  it, so a call that ran keeps its row. Only a shutdown during an outage loses rows (logged with
  their number).

No audit row, no action: :meth:`AuditWriter.ensure_writable` proves the store writable before a
state-changing call is sent (a write that changes nothing, committed; see
:meth:`host.store.AuditLog.probe`); during an outage (a batch is failing) it probes on a worker
thread and, once the store answers again, has the queued rows written at once.
The serve log gets one line when an outage starts and one when it ends: the failure's kind
(:func:`outage_reason`) and exception class, never the driver's text or the database host. With an
``outage_log`` (serve passes :data:`host.pipeline.STORE_OUTAGE_LOG`) the outage line is that shared
limiter's, in the same window as every other store-outage line of the process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import anyio.to_thread

from host.store import AuditLog, AuditRecord, AuditUnavailable

__all__ = [
    "DEFAULT_DURABILITY",
    "DEFAULT_FLUSH_INTERVAL_SECONDS",
    "OUTAGE_RETRY_SECONDS",
    "PROBE_TIMEOUT_SECONDS",
    "AuditWriter",
    "Durability",
    "OutageNotes",
    "outage_reason",
]

_log = logging.getLogger(__name__)

Durability = Literal["commit", "interval"]
DEFAULT_DURABILITY: Durability = "commit"
DEFAULT_FLUSH_INTERVAL_SECONDS = 0.05
"""How long the ``interval`` writer collects rows before a commit (seconds)."""
RETRY_DELAYS_SECONDS = (0.05, 0.5, 2.0)
"""Waits between attempts of a failing batch write (e.g. the database locked by another writer
beyond SQLite's busy timeout)."""
OUTAGE_RETRY_SECONDS = 2.0
"""Wait between attempts once a batch failed every retry: the rows stay queued until written."""
PROBE_TIMEOUT_SECONDS = 2.0
"""How long :meth:`AuditWriter.ensure_writable` waits for another writer's SQLite lock."""
PROBE_LOG_INTERVAL_SECONDS = 30.0
"""At most one serve-log line per this many seconds about failing probes."""


def outage_reason(error: BaseException) -> str:
    """A short, driver-free cause of a failed audit write (see :class:`host.store.AuditUnavailable`)."""
    if isinstance(error, AuditUnavailable):
        return error.reason
    text = str(error).lower()
    if "locked" in text or "busy" in text:
        return "locked by another writer"
    if "disk is full" in text or "disk full" in text or "no space" in text:
        return "disk full"
    if "readonly" in text or "read-only" in text:
        return "read-only"
    if "connect" in text or "server closed" in text or "terminat" in text or "shutdown" in text:
        return "unreachable"
    return "write failed"


class OutageNotes(Protocol):
    """Where store failures are counted and logged, rate-limited (:class:`host.pipeline.StoreOutageLog`)."""

    def note(self, error: BaseException, where: str) -> bool:
        """Count one failed store access at stage ``where``; ``True`` when a line was written."""
        ...


def _failure(error: BaseException) -> str:
    """``error`` for a log line: its kind and class, never the driver's text (it may name the host)."""
    return f"{outage_reason(error)}; {type(error).__name__}"


def _stamped(entry: AuditRecord | Mapping[str, Any]) -> AuditRecord:
    """``entry`` as a record, its time now unless it has one."""
    record = AuditRecord.coerce(entry)
    return record if record.at is not None else replace(record, at=time.time())


@dataclass
class _Row:
    entry: AuditRecord
    done: concurrent.futures.Future[int] = field(default_factory=concurrent.futures.Future)


@dataclass
class _Flush:
    done: threading.Event = field(default_factory=threading.Event)


_STOP = object()
_CHECKPOINT = object()


class AuditWriter:
    """Batched, ordered writes of audit rows through :meth:`AuditLog.record_many` (see module doc).

    Args:
        audit_log: where rows go.
        durability: ``"commit"`` (callers wait for the commit) or ``"interval"``.
        flush_interval_seconds: the ``interval`` collection window.
        max_batch: most rows per transaction.
        max_pending: most rows queued in memory.
        outage_log: where failed writes and probes are logged, rate-limited with the process's
            other store-outage lines; ``None``: this writer logs its own line (one per outage and
            at most one per :data:`PROBE_LOG_INTERVAL_SECONDS` for probes).

    Thread-safe. The writer thread starts on the first row; :meth:`close` writes what is queued
    and stops it. Rows written after :meth:`close` are written at once, on the caller's thread.
    """

    def __init__(
        self,
        audit_log: AuditLog,
        *,
        durability: Durability = DEFAULT_DURABILITY,
        flush_interval_seconds: float = DEFAULT_FLUSH_INTERVAL_SECONDS,
        max_batch: int = 500,
        max_pending: int = 10_000,
        outage_log: OutageNotes | None = None,
    ) -> None:
        self.audit_log = audit_log
        self._outage_log = outage_log
        self.configure(durability=durability, flush_interval_seconds=flush_interval_seconds)
        self.max_batch = max_batch
        self._q: queue.Queue[Any] = queue.Queue(maxsize=max_pending)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._queued_rows = 0  # rows submitted to the thread path and not written (or failed) yet
        self._checkpoint_queued = False
        self._outage: AuditUnavailable | None = None  # set while a batch fails every retry
        self._wake = threading.Event()  # cuts an outage retry's wait short (store back, or closing)
        self._healthy = threading.Event()  # clear while an outage lasts
        self._healthy.set()
        self._probe_logged = -PROBE_LOG_INTERVAL_SECONDS
        self._outage_logged = False

    def configure(self, *, durability: Durability, flush_interval_seconds: float) -> None:
        """Change the durability mode (see module doc); call before serving.

        Raises:
            ValueError: an unknown mode or a window outside (0, 60] seconds.
        """
        if durability not in ("commit", "interval"):
            raise ValueError(f"audit durability must be 'commit' or 'interval', got {durability!r}")
        if not 0 < flush_interval_seconds <= 60:
            raise ValueError(f"audit flush interval must be in (0, 60] seconds, got {flush_interval_seconds!r}")
        self.durability: Durability = durability
        self.flush_interval_seconds = flush_interval_seconds

    # -- producers ------------------------------------------------------------------------------
    def submit(self, entry: AuditRecord | Mapping[str, Any], *, block: bool = True) -> concurrent.futures.Future[int]:
        """Queue one row (an :class:`AuditRecord` or a mapping of its fields; ``at`` defaults to
        now); the future gets its id once committed.

        Raises:
            queue.Full: ``block=False`` and ``max_pending`` rows are waiting.
            TypeError: an unknown field or no ``action`` (nothing is queued).
        """
        row = _Row(_stamped(entry))
        with self._lock:
            closed = self._closed
            if not closed:
                self._start_thread()
                self._queued_rows += 1
        if closed:  # after shutdown: nothing drains the queue any more, so write it here
            self._write([row])
            return row.done
        try:
            self._q.put(row, block=block)
        except queue.Full:
            with self._lock:
                self._queued_rows -= 1
            raise
        return row.done

    def _start_thread(self) -> None:  # under self._lock
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="toolhost-audit-writer", daemon=True)
            self._thread.start()

    def _write_inline(self, entry: AuditRecord | Mapping[str, Any]) -> int | None:
        """Commit one row right here when that needs no waiting (see module doc); ``None`` otherwise."""
        if self.durability != "commit" or self._queued_rows or self._closed:
            return None
        try:
            ids = self.audit_log.try_record_many([_stamped(entry)])
        except sqlite3.Error as e:  # the thread path retries it and reports a lasting failure
            _log.debug("toolhost: inline audit write failed (%s); handing it to the writer thread", _failure(e))
            return None
        if ids is None:
            return None
        if self.audit_log.checkpoint_due and not self._checkpoint_queued:
            with self._lock:
                if not self._closed:
                    self._start_thread()
                    self._checkpoint_queued = True
                    self._q.put(_CHECKPOINT)
        return ids[0]

    @property
    def outage(self) -> AuditUnavailable | None:
        """The current outage (a batch failed every retry and is being retried), else ``None``."""
        return self._outage

    def unavailable(self, error: BaseException) -> AuditUnavailable:
        """``error`` of the store as a caller-safe :class:`~host.store.AuditUnavailable`."""
        if isinstance(error, AuditUnavailable):
            return error
        return AuditUnavailable(self.audit_log.label, outage_reason(error), OUTAGE_RETRY_SECONDS * 2)

    async def ensure_writable(self, timeout_seconds: float = PROBE_TIMEOUT_SECONDS) -> None:
        """Prove the audit log writable before a call that needs its row is sent (see module doc):
        on the event loop when that needs no waiting, else on a worker thread waiting up to
        ``timeout_seconds`` for another writer's lock.

        Raises:
            host.store.AuditUnavailable: an outage is going on, or the probe failed.
        """
        try:
            if self._outage is None and self.audit_log.try_probe():
                return
            await anyio.to_thread.run_sync(self.audit_log.probe, timeout_seconds)
        except Exception as e:  # noqa: BLE001 - every store failure refuses the call, with a clean message
            now = time.monotonic()
            if self._outage_log is not None:
                self._outage_log.note(e, "audit probe")
            elif now - self._probe_logged >= PROBE_LOG_INTERVAL_SECONDS:  # one line per interval, not per call
                self._probe_logged = now
                _log.warning("toolhost: the audit log cannot be written (%s); state-changing calls are "
                             "refused until it can", _failure(e))
            raise self.unavailable(e) from None
        if self._outage is not None:
            # a probe can succeed where a real row does not fit (a full disk with a few free bytes):
            # the store is back only once the queued rows are written (at once now, not at the next retry)
            self._wake.set()
            if not await anyio.to_thread.run_sync(self._healthy.wait, timeout_seconds):
                outage = self._outage
                if outage is not None:
                    raise _fresh(outage)

    async def write(self, entry: AuditRecord | Mapping[str, Any], *, timeout: float | None = None) -> int | None:
        """Queue one row from the event loop: with ``commit`` durability, wait until it is committed
        and return its id; with ``interval``, return ``None`` at once. Never blocks the event loop
        (a full queue is waited for on a worker thread; an inline commit never waits for a lock).

        Raises:
            host.store.AuditUnavailable: the row was not committed (every retry failed, or not
                within ``timeout`` seconds); it stays queued and is written once the store is back.
        """
        row_id = self._write_inline(entry)
        if row_id is not None:
            return row_id
        try:
            done = self.submit(entry, block=False)
        except queue.Full:
            done = await anyio.to_thread.run_sync(self.submit, entry)
        if self.durability == "interval":
            return None
        outage = self._outage
        if outage is not None:  # queued behind the failing batch: say so now, write it later
            raise _fresh(outage)
        # shielded: a cancelled caller must not cancel the row's future under the writer thread
        # (set_result on a cancelled future raises there and stopped the thread for good)
        waiter = asyncio.wrap_future(done)
        waiter.add_done_callback(_retrieve)  # a late failure after a timeout is not "never retrieved"
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError:
            raise AuditUnavailable(self.audit_log.label, "not written in time", OUTAGE_RETRY_SECONDS * 2) from None
        except AuditUnavailable:
            raise
        except Exception as e:  # noqa: BLE001 - the store's error, without its driver text
            raise self.unavailable(e) from None

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every row queued before this call is written; ``False`` on timeout."""
        with self._lock:
            running = self._thread is not None and not self._closed
        if not running:
            return True
        marker = _Flush()
        self._q.put(marker)
        return marker.done.wait(timeout)

    def close(self, timeout: float | None = 60.0) -> None:
        """Write every queued row, then stop the writer thread (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            self._q.put(_STOP)
            thread.join(timeout)
            if thread.is_alive():
                _log.error("toolhost: the audit writer did not finish within %.0f s; %d rows may be unwritten",
                           timeout or 0, self._q.qsize())

    @property
    def pending(self) -> int:
        """Rows queued and not yet taken by the writer."""
        return self._q.qsize()

    @property
    def unwritten(self) -> int:
        """Rows handed to the writer thread and not committed yet (queued, or in the batch it is
        gathering or writing): what a crash could lose under ``interval`` durability."""
        with self._lock:
            return self._queued_rows

    # -- the writer thread ----------------------------------------------------------------------
    def _run(self) -> None:
        stop = False
        while not stop:
            batch: list[_Row] = []
            flushes: list[_Flush] = []
            checkpoint = False
            item = self._q.get()
            deadline = time.monotonic() + self.flush_interval_seconds
            while True:
                if item is _STOP:
                    stop = True
                elif item is _CHECKPOINT:
                    checkpoint = True
                elif isinstance(item, _Flush):
                    flushes.append(item)
                else:
                    batch.append(item)
                if stop or flushes or len(batch) >= self.max_batch:
                    break
                try:
                    if self.durability == "interval":
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            break
                        item = self._q.get(timeout=remaining)
                    else:
                        item = self._q.get_nowait()  # group commit: whatever queued meanwhile
                except queue.Empty:
                    break
            if stop:  # drain what is still queued (close() put _STOP after every row)
                while True:
                    try:
                        rest = self._q.get_nowait()
                    except queue.Empty:
                        break
                    if isinstance(rest, _Row):
                        batch.append(rest)
                    elif isinstance(rest, _Flush):
                        flushes.append(rest)
            for start in range(0, len(batch), self.max_batch):
                self._write(batch[start : start + self.max_batch])
            if checkpoint:
                self._checkpoint_queued = False
                try:
                    self.audit_log.checkpoint()
                except Exception as e:  # noqa: BLE001 - the next one catches up
                    _log.warning("toolhost: audit WAL checkpoint failed (%s)", _failure(e))
            for f in flushes:
                f.done.set()

    def _write(self, batch: list[_Row]) -> None:
        if not batch:
            return
        error: BaseException | None = None
        for delay in (*RETRY_DELAYS_SECONDS, None):
            try:
                ids = self.audit_log.record_many([r.entry for r in batch])
            except Exception as e:  # noqa: BLE001 - retried, then reported to every waiting request
                error = e
                if self._outage is None:  # from the first failed attempt on, calls that need a row wait or are refused
                    self._outage = self.unavailable(e)
                    self._healthy.clear()
                if delay is not None:
                    time.sleep(delay)
                continue
            self._written(batch)
            self._outage = None
            self._healthy.set()
            for row, row_id in zip(batch, ids, strict=True):
                _settle(row.done, row_id)
            return
        assert error is not None
        outage = self.unavailable(error)
        if self._outage_log is not None:
            self._outage_log.note(error, "audit write")
        elif not self._outage_logged:
            self._outage_logged = True
            _log.error("toolhost: could not write %d audit rows after %d attempts (%s); they stay queued "
                       "and state-changing calls are refused until the audit log can be written",
                       len(batch), len(RETRY_DELAYS_SECONDS) + 1, _failure(error))
        self._outage = outage
        self._healthy.clear()
        for row in batch:  # the waiters learn now; the rows stay queued (below)
            _settle(row.done, None, _fresh(outage))
        while True:
            self._wake.wait(OUTAGE_RETRY_SECONDS)
            self._wake.clear()
            try:
                ids = self.audit_log.record_many([r.entry for r in batch])
            except Exception as e:  # noqa: BLE001 - still down
                if self._closed:
                    _log.error("toolhost: shutting down with the audit log unwritable (%s): %d audit rows "
                               "lost", _failure(e), len(batch) + self._q.qsize())
                    self._written(batch)
                    return
                continue
            _log.warning("toolhost: the audit log can be written again; %d queued rows written", len(batch))
            self._outage = None
            self._outage_logged = False
            self._healthy.set()
            self._written(batch)
            for row, row_id in zip(batch, ids, strict=True):
                _settle(row.done, row_id)
            return

    def _written(self, batch: list[_Row]) -> None:
        """Rows left the thread path (committed or failed for good): inline commits may resume."""
        with self._lock:
            self._queued_rows = max(0, self._queued_rows - len(batch))


def _fresh(outage: AuditUnavailable) -> AuditUnavailable:
    """A new exception like ``outage`` (raising one instance again and again grows its traceback)."""
    return AuditUnavailable(outage.store, outage.reason, outage.retry_after_seconds)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _settle(done: concurrent.futures.Future[int], row_id: int | None, error: BaseException | None = None) -> None:
    """Resolve one row's future; a future its waiter cancelled is left as it is (the row is
    written either way; raising here would stop the writer thread)."""
    try:
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(row_id)  # type: ignore[arg-type]
    except concurrent.futures.InvalidStateError:
        pass

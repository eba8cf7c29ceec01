"""No audit row, no action: the send gate of audited calls and the answer of a call whose row is late.

Rules (``toolhost.audit_read_calls`` chooses the rule of read-only tools):

* a **write or destructive** tool's call is sent only after the audit log was proven writable
  (:meth:`host.access.audit_writer.AuditWriter.ensure_writable`); otherwise it is answered
  ``not_executed`` with ``details.sent = false`` and the store's message ("permission store
  unavailable: ..."), plus ``retry_after_seconds``;
* a **read-only** tool's call follows ``audit_read_calls``: ``"best_effort"`` (default) sends it
  without the check and answers its result even when its row cannot be written at once (the row
  stays queued); ``"required"`` treats it like a write;
* a call that **was sent** and whose row could not be committed (in time) keeps its row queued
  (it is written when the store is back) and, unless it is a best-effort read, is answered
  "outcome unknown" (``upstream_error`` with ``details.sent = true``, ``details.outcome =
  "unknown"``, ``details.audit = "queued"``): the caller is told it may have taken effect, and no
  answered result lacks its audit row.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, Protocol

from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolResult
from host.pipeline.prepare import Prepared
from host.pipeline.results import error_result
from host.store import AuditUnavailable

__all__ = ["AuditProbe", "AuditSendGate", "ReadCalls", "SendRecord", "outcome_unknown", "send_record"]

ReadCalls = Literal["best_effort", "required"]


class AuditProbe(Protocol):
    """Proves the audit log writable (e.g. :class:`host.access.AccessControl`)."""

    async def ensure_auditable(self) -> None:
        """Raises :class:`host.store.AuditUnavailable` when a row could not be written now."""
        ...


@dataclass
class SendRecord:
    """Whether the current call was let through to its server, and under which rule."""

    sent: bool = False
    row_required: bool = True


_current: ContextVar[SendRecord | None] = ContextVar("toolhost_send_record", default=None)


@contextmanager
def send_record() -> Iterator[SendRecord]:
    """Collect, for the call run inside, whether :class:`AuditSendGate` let it be sent."""
    record = SendRecord()
    token = _current.set(record)
    try:
        yield record
    finally:
        _current.reset(token)


class AuditSendGate:
    """:class:`host.pipeline.SendGate` of audited calls (see module doc).

    Args:
        probe: proves the audit log writable.
        read_calls: the rule of read-only tools (``best_effort`` or ``required``).
    """

    def __init__(self, probe: AuditProbe, read_calls: ReadCalls = "best_effort") -> None:
        if read_calls not in ("best_effort", "required"):
            raise ValueError(f"audit_read_calls must be 'best_effort' or 'required', got {read_calls!r}")
        self.probe = probe
        self.read_calls = read_calls

    async def before_send(self, prep: Prepared) -> ToolResult | None:
        record = _current.get()
        required = not prep.record.read_only or self.read_calls == "required"
        if required:
            try:
                await self.probe.ensure_auditable()
            except AuditUnavailable as e:
                return error_result(
                    prep.call, ResultStatus.NOT_EXECUTED, f"{e}; the call was not sent to {prep.record.server}",
                    where="audit", retry_after_seconds=e.retry_after_seconds,
                    details={"sent": False, "reason": "audit_unavailable", "store": e.store, "cause": e.reason},
                )
        if record is not None:
            record.sent = True
            record.row_required = required
        return None


def outcome_unknown(result: ToolResult, server: str | None, error: AuditUnavailable) -> ToolResult:
    """The answer of a call that was sent but whose audit row is not written yet (see module doc);
    ``details.upstream_status`` is how the call ended upstream (its content is withheld)."""
    where = f" to {server}" if server else ""
    message = (
        f"outcome unknown: the call was sent{where} and may have taken effect, but its audit row could not be "
        f"written yet ({error}); the row stays queued and is written when the store is back. Check the "
        "effect before retrying"
    )
    status = ResultStatus.UPSTREAM_ERROR
    return ToolResult(
        call_id=result.call_id, name=result.name, status=status,
        content=[TextBlock(text=f"{status.value}: {message}")],
        error=ErrorInfo(
            code=status.value, message=message, where="audit", retry_after_seconds=error.retry_after_seconds,
            details={"sent": True, "outcome": "unknown", "audit": "queued", "reason": "audit_unavailable",
                     "store": error.store, "cause": error.reason, "upstream_status": result.status.value},
        ),
    )

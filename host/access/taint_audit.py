"""The audit row of a tainted session dropped to bound memory (:class:`registry.safety.TaintTracker`).

toolhost keeps a bounded number of taint sessions per caller and in all; dropping one that had
seen a private or untrusted result means its next egress call starts clean, so it is never
silent: besides the warning in the serve log, each drop is an audit row ``action="taint"``,
``status="session_dropped"``, ``detail`` naming the session, its state, the reason and the
source calls it had seen (``toolhost audit --action taint``).
"""

from __future__ import annotations

import logging
import queue

from host.access.control import AccessControl
from host.store import AuditRecord
from registry.safety import DropListener, SessionTaint

__all__ = ["taint_drop_auditor"]

_logger = logging.getLogger("toolhost.taint")


def taint_drop_auditor(access: AccessControl) -> DropListener:
    """A :data:`registry.safety.DropListener` queueing the audit row (module docstring) without
    waiting (the drop happens on the call path); a full audit queue is logged."""

    def audited(state: SessionTaint, reason: str) -> None:
        seen = ", ".join(c.describe() for c in (*state.private_calls, *state.untrusted_calls)[:8])
        detail = (f"session {state.session_id} ({state.state}) dropped: {reason}; it had seen "
                  f"{state.private_count} private and {state.untrusted_count} untrusted results ({seen})")
        try:
            access.audit_writer.submit(AuditRecord.of("taint", status="session_dropped", detail=detail), block=False)
        except queue.Full:
            _logger.error("toolhost: audit queue full; not audited: %s", detail)

    return audited

"""One audit entry to append, as a frozen value: what every writer of the audit log hands over.

:class:`AuditRecord` names the fields once; :meth:`host.store.AuditLog.record` /
:meth:`~host.store.AuditLog.record_many` redact, cut and chain it into a row
(:class:`host.store.AuditEntry` is the stored row read back). :meth:`AuditRecord.of` builds one
from what the request path knows (a :class:`registry.policy.Principal`, a
:class:`registry.policy.Decision`, seconds), as :meth:`host.access.AccessControl.audit` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from registry.policy import Decision, Principal

__all__ = ["AuditRecord"]


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One audit entry before redaction and chaining.

    Attributes:
        action: ``call``, ``list``, ``search``, ``auth``, ``approval``, ``pin`` or ``admin``.
        user, key_id: who acted (``None``: nobody known).
        tool: the qualified tool name.
        decision: ``allow``/``deny``/``approval``; rule: the rule that decided.
        status: e.g. ``ok``, ``tool_error``, ``unknown_tool``, ``approval_required``.
        duration_ms: how long the call took (milliseconds).
        arguments: the call's arguments (JSON-like), stored redacted and cut.
        detail: free text, stored redacted.
        definition_hash: sha256 of the served tool definition the call ran against.
        approval_id, approver: the approval that let it run and who decided it.
        arguments_digest: sha256 of the canonical unredacted arguments (``None``: taken from
            ``arguments``; given when only the digest is known, as for an approval).
        at: UNIX seconds (``None``: when it is written).
    """

    action: str
    user: str | None = None
    key_id: str | None = None
    tool: str | None = None
    decision: str | None = None
    rule: str | None = None
    status: str | None = None
    duration_ms: float | None = None
    arguments: Any = None
    detail: str | None = None
    definition_hash: str | None = None
    approval_id: str | None = None
    arguments_digest: str | None = None
    approver: str | None = None
    at: float | None = None

    @classmethod
    def of(
        cls,
        action: str,
        *,
        principal: Principal | None = None,
        decision: Decision | str | None = None,
        rule: str | None = None,
        duration_seconds: float | None = None,
        **other: Any,
    ) -> AuditRecord:
        """The entry of ``principal``'s ``action``: user and key id from ``principal``; a
        :class:`Decision` gives its effect and, unless ``rule`` is given, its rule;
        ``duration_seconds`` becomes ``duration_ms``; ``other``: the remaining attributes.

        Raises:
            TypeError: an unknown attribute in ``other``.
        """
        if isinstance(decision, Decision):
            rule = rule or decision.rule
            decision = decision.effect.value
        return cls(
            action,
            user=principal.recorded if principal else None,
            key_id=principal.key_id if principal else None,
            decision=decision,
            rule=rule,
            duration_ms=None if duration_seconds is None else duration_seconds * 1000.0,
            **other,
        )

    @classmethod
    def coerce(cls, entry: AuditRecord | Mapping[str, Any]) -> AuditRecord:
        """``entry`` itself, or the record of a mapping of its attribute names.

        Raises:
            TypeError: the mapping has an unknown field or no ``action``.
        """
        if isinstance(entry, AuditRecord):
            return entry
        unknown = set(entry) - FIELDS
        if unknown:
            raise TypeError(f"unknown audit entry field(s) {sorted(unknown)}; expected some of {sorted(FIELDS)}")
        if "action" not in entry:
            raise TypeError("an audit entry needs 'action' (call, list, search, auth, approval, pin, admin)")
        return cls(**entry)


FIELDS = frozenset(f.name for f in fields(AuditRecord))
"""The attribute names of :class:`AuditRecord`."""

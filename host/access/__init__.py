"""Access control: who is calling, what they may see and run, approvals, pins and audit.

:class:`AccessControl` (:mod:`host.access.control`) is the one object the registry server
consults on every request; it wraps the permission store (:mod:`host.store`).
"""

from host.access.control import AccessControl, RequestAccess
from host.access.gate import (
    APPROVER_ROLE,
    ApprovalGate,
    ApprovalRecord,
    ElicitApproval,
    NotAnApprover,
    approval_elicitation,
    approval_record,
    decide,
)

__all__ = [
    "APPROVER_ROLE",
    "AccessControl",
    "ApprovalGate",
    "ApprovalRecord",
    "ElicitApproval",
    "NotAnApprover",
    "RequestAccess",
    "approval_elicitation",
    "approval_record",
    "decide",
]

"""Access control: who is calling, what they may see and run, approvals, pins and audit.

:class:`AccessControl` (:mod:`host.access.control`) wraps the permission store (:mod:`host.store`).
The stateful layers of the policy stack live here (each a :class:`registry.policy.RequestPolicy`),
and :func:`build_policy` assembles them (:mod:`host.access.build`).
"""

from host.access.build import build_policy, local_policy
from host.access.call_scope import CallScopedPolicy, call_scope
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
from host.access.local_admin import (
    LOCAL_ADMIN_KEY,
    LocalAdminDisclosure,
    LocalAdminPolicy,
    is_local_admin,
    local_admin_principal,
)
from host.access.open_access import AuthMode, OpenAccessPolicy, OpenView, is_loopback, open_access

__all__ = [
    "APPROVER_ROLE",
    "LOCAL_ADMIN_KEY",
    "AccessControl",
    "ApprovalGate",
    "ApprovalRecord",
    "AuthMode",
    "CallScopedPolicy",
    "ElicitApproval",
    "LocalAdminDisclosure",
    "LocalAdminPolicy",
    "NotAnApprover",
    "OpenAccessPolicy",
    "OpenView",
    "RequestAccess",
    "approval_elicitation",
    "approval_record",
    "build_policy",
    "call_scope",
    "decide",
    "is_local_admin",
    "is_loopback",
    "local_admin_principal",
    "local_policy",
    "open_access",
]

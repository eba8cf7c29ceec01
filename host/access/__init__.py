"""Access control: who is calling, what they may see and run, approvals, pins and audit.

:class:`AccessControl` (:mod:`host.access.control`) is the one object the registry server
consults on every request; it wraps the permission store (:mod:`host.store`).
"""

from host.access.control import AccessControl, ApprovalGate, ElicitApproval, RequestAccess, approval_elicitation

__all__ = ["AccessControl", "ApprovalGate", "ElicitApproval", "RequestAccess", "approval_elicitation"]

"""The local admin's calls through a running gateway: full access, definition pins still hold.

The CLI of the data folder (holder of the loopback-only local admin token, see
:mod:`servers.admin.auth`) runs ``toolhost call`` / ``toolhost tools`` through the gateway as the
local admin when no ``--user`` is given, exactly as it would on its own: every tool, but a changed
(held) definition is refused until ``toolhost pins accept``. Its principal is ``local:<os user>``
with the key id :data:`LOCAL_ADMIN_KEY` (API key ids are 12 hex digits, so no client can present
it); :class:`LocalAdminPolicy` answers for that principal with its ``local`` policy and for
everyone else with the gateway's.
"""

from __future__ import annotations

from registry.policy import Decision, Effect, PolicyView, Principal, RequestPolicy
from registry.tool import ToolRecord

__all__ = ["LOCAL_ADMIN_KEY", "LocalAdminDisclosure", "LocalAdminPolicy", "is_local_admin", "local_admin_principal"]

LOCAL_ADMIN_KEY = "local-admin"


def local_admin_principal(name: str) -> Principal:
    """The principal of the local admin's calls (``name``: ``local:<os user>``)."""
    return Principal(user=name, key_id=LOCAL_ADMIN_KEY)


def is_local_admin(principal: Principal) -> bool:
    """Whether ``principal`` is the local admin (key id :data:`LOCAL_ADMIN_KEY`)."""
    return principal.key_id == LOCAL_ADMIN_KEY


class LocalAdminPolicy:
    """A :class:`registry.policy.RequestPolicy`: ``local`` for the local admin, ``inner`` for every
    other caller (module docstring). Each method delegates by name.

    Args:
        inner: the gateway's policy (the permission store, open access, or allow-all).
        local: the local admin's policy (open access without failing closed: pins hold).
    """

    def __init__(self, inner: RequestPolicy, local: RequestPolicy) -> None:
        self.inner = inner
        self.local = local

    def _for(self, principal: Principal) -> RequestPolicy:
        return self.local if is_local_admin(principal) else self.inner

    @property
    def per_user(self) -> bool:
        return self.inner.per_user

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        return self._for(principal).evaluate(principal, tool)

    def for_request(self, principal: Principal) -> PolicyView:
        return self._for(principal).for_request(principal)


class LocalAdminDisclosure:
    """A :class:`host.pipeline.DenialDisclosure`: the local admin is told that a definition is held
    (rules ``pin:changed`` / ``pin:held``) with the policy's reason, which names ``toolhost pins
    diff`` and ``toolhost pins accept --hash``; every other caller and denial stays ``unknown_tool``
    (a caller without the local admin token learns nothing about pins)."""

    def explains(self, principal: Principal, decision: Decision) -> bool:
        return (decision.effect is Effect.DENY and is_local_admin(principal)
                and (decision.rule or "").startswith("pin:"))

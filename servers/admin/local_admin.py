"""The local admin's calls through a running serve: full access, definition pins still hold.

The CLI of the data folder (holder of the loopback-only local admin token, see
:mod:`servers.admin.auth`) runs ``toolhost call`` / ``toolhost tools`` through the serve as the
local admin when no ``--user`` is given, exactly as it would on its own: every tool, but a changed
(held) definition is refused until ``toolhost pins accept``. Its principal is
``local:<os user>`` with the key id :data:`LOCAL_ADMIN_KEY` (API key ids are 12 hex digits, so no
client can present it); :class:`LocalAdminPolicy` wraps the serve's policy and answers for that
principal with :class:`servers.access_mode.OpenAccessPolicy` (``fail_closed=False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable, Hashable
from typing import Any

from registry import Decision, Principal, ToolRecord

__all__ = ["LOCAL_ADMIN_KEY", "LocalAdminPolicy", "is_local_admin", "local_admin_principal"]

LOCAL_ADMIN_KEY = "local-admin"


def local_admin_principal(name: str) -> Principal:
    """The principal of the local admin's calls (``name``: ``local:<os user>``)."""
    return Principal(user=name, key_id=LOCAL_ADMIN_KEY)


def is_local_admin(principal: Principal) -> bool:
    return principal.key_id == LOCAL_ADMIN_KEY


@dataclass(frozen=True)
class _View:
    visible: Callable[[ToolRecord], bool]
    visible_key: Hashable | None


class LocalAdminPolicy:
    """``inner`` for every caller but the local admin (see module docstring).

    Args:
        inner: the serve's policy (the permission store, or open access).
        access: the permission store (its pins apply to the local admin).
    """

    def __init__(self, inner: Any, access: Any) -> None:
        from servers.access_mode import OpenAccessPolicy  # noqa: PLC0415

        self.inner = inner
        self.local = OpenAccessPolicy(access, fail_closed=False)

    @property
    def revision(self) -> int:
        return self.inner.revision

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        return (self.local if is_local_admin(principal) else self.inner).evaluate(principal, tool)

    def for_request(self, principal: Principal) -> Any:
        if is_local_admin(principal):
            return self.local.for_request(principal)
        for_request = getattr(self.inner, "for_request", None)
        if for_request is not None:
            return for_request(principal)
        return _View(lambda tool: self.inner.evaluate(principal, tool).visible, None)

    def __getattr__(self, name: str) -> Any:  # everything else the serve's policy offers
        return getattr(self.inner, name)

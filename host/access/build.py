"""Building the policy stack: the one place that decides which layers a gateway or CLI uses.

Layers (each a :class:`registry.policy.RequestPolicy`, outermost first):

==========================  ========================================================================
the call scope              :class:`host.access.call_scope.CallScopedPolicy`, added by
                            :class:`host.runtime.HostRuntime` around whatever it is given: one
                            decision per tool per call
the local admin             :class:`host.access.local_admin.LocalAdminPolicy`: the CLI's calls
                            through a running gateway (every tool, pins hold)
the permission store        :class:`host.access.AccessControl` (grants + pins) when users are
                            enforced, else :class:`host.access.open_access.OpenAccessPolicy`
                            (every tool, pins hold, closed once users appear)
allow-all                   :class:`registry.policy.AllowAll` for ``--auth off`` (no store, no pins)
==========================  ========================================================================
"""

from __future__ import annotations

from host.access.control import AccessControl
from host.access.local_admin import LocalAdminPolicy
from host.access.open_access import OpenAccessPolicy
from registry.policy import AllowAll, RequestPolicy

__all__ = ["build_policy", "local_policy"]


def build_policy(access: AccessControl | None, *, enforce: bool) -> RequestPolicy:
    """The policy of a gateway (``toolhost serve``, HTTP and stdio).

    Args:
        access: the permission store (``None`` for ``--auth off``: allow-all, no pins).
        enforce: users exist (or ``--auth on``, or a stdio ``--user``): grants decide; otherwise open
            access (every tool, pins hold, refused once users are added while it runs).

    The local admin (the data folder's CLI, :mod:`host.access.local_admin`) always gets every tool
    with pins holding, whatever ``enforce`` is.
    """
    if access is None:
        return AllowAll()
    served: RequestPolicy = access if enforce else OpenAccessPolicy(access)
    return LocalAdminPolicy(served, OpenAccessPolicy(access, fail_closed=False))


def local_policy(access: AccessControl | None, *, user: str | None = None) -> RequestPolicy:
    """The policy of the CLI's own calls (``toolhost call``/``tools``/``search`` without a gateway).

    ``user`` given: that user's grants and pins (``access`` is the store). Otherwise full local access
    with definition pins holding (a rug-pulled tool is refused here too until ``toolhost pins accept``);
    without a store (``access`` ``None``), allow-all.
    """
    if access is None:
        return AllowAll()
    if user is not None:
        return access
    return OpenAccessPolicy(access, fail_closed=False)

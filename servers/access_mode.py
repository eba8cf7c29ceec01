"""Choosing how the registry server applies per-user permissions.

``--auth auto`` (the default) enforces them when the permission database has at least one
user (``toolhost users add``); without users the server is open to every client, which is what
a fresh local install expects — but even then:

* definition pins still hold: a tool whose served description, schemas or annotations change
  after it was first seen is refused until ``toolhost pins diff`` and ``toolhost pins accept --hash`` (bug case BR-24);
* it fails closed: once a user is added while it runs, every tool is refused with a message to
  restart (a running server never stays open after permissions were turned on);
* it refuses to bind a non-loopback address (that would publish every tool to the network).

``--auth on`` always enforces (no users: nobody sees anything); ``--auth off`` never does and
keeps no pins.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from host.access import AccessControl
from registry import AllowAll, Decision, Effect, Policy, Principal, ToolRecord
from registry.permissions import PinnedPolicy

__all__ = ["AuthMode", "OpenAccessPolicy", "is_loopback", "open_access"]

AuthMode = Literal["auto", "on", "off"]
log = logging.getLogger("toolhost.access")

RESTART_REASON = (
    "users were added after this server started without permissions; restart `toolhost serve` "
    "so it requires API keys"
)


def open_access(data_dir: Path, mode: AuthMode, *, db_url: str | None = None) -> tuple[AccessControl | None, bool]:
    """``(access, enforce)``: the permission store (``None`` for ``off``) and whether users exist to enforce.

    Raises:
        ValueError: ``mode`` is not ``auto``, ``on`` or ``off``.
        host.store.StoreError: the database cannot be opened or migrated.
    """
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"--auth must be auto, on or off, got {mode!r}")
    if mode == "off":
        return None, False
    access = AccessControl.open(data_dir, url=db_url)
    return access, mode == "on" or bool(access.users.list())


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class _OpenView:
    visible: Callable[[ToolRecord], bool]
    visible_key: Hashable


class OpenAccessPolicy:
    """The policy of a server started without users (see module docstring).

    Args:
        access: the permission store; its revision is read once per request.
        fail_closed: refuse everything once users exist (a server started open); ``False`` for
            the local admin's CLI, where only the pins apply.
    """

    def __init__(self, access: AccessControl, *, fail_closed: bool = True) -> None:
        self.access = access
        self.fail_closed = fail_closed
        self._cached: tuple[int, Policy | None] | None = None

    @property
    def revision(self) -> int:
        return self.access.revision

    def _current(self) -> tuple[int, Policy | None]:
        rev = self.access.revision
        if self._cached is None or self._cached[0] != rev:
            closed = self.fail_closed and bool(self.access.users.list())
            policy = None if closed else PinnedPolicy(AllowAll(), self.access.pins.states())
            if closed and (self._cached is None or self._cached[1] is not None):
                log.warning("toolhost: every tool is now refused: %s", RESTART_REASON)
            self._cached = (rev, policy)
        return self._cached

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        _rev, policy = self._current()
        if policy is None:
            return Decision(Effect.DENY, RESTART_REASON, "open-access-closed")
        return policy.evaluate(principal, tool)

    def for_request(self, principal: Principal) -> _OpenView:
        """One consistent view per request (one revision read)."""
        rev, policy = self._current()
        if policy is None:
            return _OpenView(lambda _tool: False, (principal, rev, "closed"))
        return _OpenView(lambda tool: policy.evaluate(principal, tool).visible, (principal, rev))

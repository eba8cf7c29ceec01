"""Open access: the policy of a gateway started without users, and choosing the access mode.

``--auth auto`` (the default) enforces per-user permissions when the permission database has at
least one user (``toolhost users add``); without users the gateway is open to every client, which is
what a fresh local install expects — but even then:

* definition pins still hold: a tool whose served description, schemas or annotations change after
  it was first seen is refused until ``toolhost pins diff`` and ``toolhost pins accept --hash``;
* it fails closed: once a user is added while it runs, every tool is refused with a message to
  restart (a running gateway never stays open after permissions were turned on);
* the CLI refuses to bind a non-loopback address (that would publish every tool to the network).

``--auth on`` always enforces (no users: nobody sees anything); ``--auth off`` never does and keeps
no pins.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from host.access.control import AccessControl
from registry.permissions import PinnedPolicy
from registry.policy import AllowAll, Decision, Effect, Principal
from registry.tool import ToolRecord

__all__ = ["CLOSED_RULE", "RESTART_REASON", "AuthMode", "ClosedGatewayDisclosure", "OpenAccessPolicy", "OpenView",
           "is_loopback", "open_access"]

AuthMode = Literal["auto", "on", "off"]
log = logging.getLogger("toolhost.access")

RESTART_REASON = (
    "users were added after this toolhost gateway started without permissions (open access), so it "
    "refuses every tool until it is restarted; then it requires an API key: ask its operator to "
    "restart `toolhost serve` and for a key (`toolhost keys create USER`), and connect with "
    "'Authorization: Bearer <key>'"
)
CLOSED_RULE = "open-access-closed"
"""The rule of every decision of a gateway that closed because users were added while it ran."""


def open_access(data_dir: Path, mode: AuthMode, *, db_url: str | None = None,
                learned_scan: bool = False) -> tuple[AccessControl | None, bool]:
    """``(access, enforce)``: the permission store (``None`` for ``off``) and whether users exist to enforce.

    ``learned_scan``: the config file's ``toolhost.definition_scan.learned`` (``$TOOLHOST_LEARNED_SCAN``
    overrides it; :func:`host.safety.learned_scan_enabled`); off: the scanner's rules alone hold.

    Raises:
        ValueError: ``mode`` is not ``auto``, ``on`` or ``off``, or ``$TOOLHOST_LEARNED_SCAN`` is not a yes/no word.
        host.store.StoreError: the database cannot be opened or migrated.
    """
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"--auth must be auto, on or off, got {mode!r}")
    if mode == "off":
        return None, False
    from host.safety import learned_scan_enabled, load_definition_scorer, open_score_cache  # lazy: the model

    scorer = load_definition_scorer() if learned_scan_enabled(learned_scan) else None
    saved = open_score_cache(data_dir, scorer) if scorer is not None else None
    access = AccessControl.open(data_dir, url=db_url, definition_scorer=scorer, definition_scores=saved)
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
class OpenView:
    """One request's :class:`registry.policy.PolicyView` under open access.

    Attributes:
        principal: the caller.
        policy: every tool allowed, pins holding, at ``revision``; ``None`` once the gateway closed
            (users were added while it ran): then nothing is visible and every call is refused.
        revision: the access revision the view was built from.
    """

    principal: Principal
    policy: PinnedPolicy | None
    revision: int

    @property
    def visible_key(self) -> Hashable:
        return (self.principal, self.revision, "open" if self.policy is not None else "closed")

    def evaluate(self, tool: ToolRecord) -> Decision:
        if self.policy is None:
            return Decision(Effect.DENY, RESTART_REASON, CLOSED_RULE)
        return self.policy.evaluate(self.principal, tool)

    def visible(self, tool: ToolRecord) -> bool:
        return self.evaluate(tool).visible

    def catalog_visible(self, item: ToolRecord) -> bool:
        return self.policy is not None and self.policy.catalog_decision(self.principal, item).visible


class ClosedGatewayDisclosure:
    """A :class:`host.pipeline.DenialDisclosure`: a gateway closed because users were added while it
    ran (rule :data:`CLOSED_RULE`) tells every caller so and what to do, instead of ``unknown_tool``
    (the denial concerns the whole gateway, not a tool: it reveals nothing a caller could not see);
    every other denial is left to ``inner``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def explains(self, principal: Principal, decision: Decision) -> bool:
        return decision.rule == CLOSED_RULE or bool(self.inner.explains(principal, decision))


class OpenAccessPolicy:
    """The :class:`registry.policy.RequestPolicy` of a gateway started without users (module docstring).

    Args:
        access: the permission store; its revision is read once per request.
        fail_closed: refuse everything once users exist (a gateway started open); ``False`` for the
            local admin, where only the pins apply.
    """

    def __init__(self, access: AccessControl, *, fail_closed: bool = True) -> None:
        self.access = access
        self.fail_closed = fail_closed
        self._cached: tuple[int, PinnedPolicy | None] | None = None

    @property
    def per_user(self) -> bool:
        """``False``: every caller gets the same answers."""
        return False

    def _current(self) -> tuple[int, PinnedPolicy | None]:
        rev = self.access.revision
        if self._cached is None or self._cached[0] != rev:
            closed = self.fail_closed and bool(self.access.users.list())
            policy = None if closed else PinnedPolicy(AllowAll(), self.access.pins.states())
            if closed and (self._cached is None or self._cached[1] is not None):
                log.warning("toolhost: every tool is now refused: %s", RESTART_REASON)
            self._cached = (rev, policy)
        return self._cached

    def for_request(self, principal: Principal) -> OpenView:
        """One consistent view per request (one revision read)."""
        rev, policy = self._current()
        return OpenView(principal, policy, rev)

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        return self.for_request(principal).evaluate(tool)

"""Authorization policy interface: who may see and call which tool.

A :class:`Policy` is a pure function of a :class:`Principal` (the caller) and a
:class:`~registry.tool.ToolRecord`, returning a :class:`Decision`: ``allow``, ``deny`` or
``approval`` (allowed once a human approves), with a human-readable reason and the rule that
decided. The same policy filters ``tools/list``, ``tool_search`` and ``call_tool`` so that
what a caller can see and what they can run never diverge (a hidden tool answers exactly like an
unknown one).

The seam every layer implements (declared here, pure):

* :class:`Policy`: ``evaluate(principal, tool) -> Decision``, the decision itself.
* :class:`RequestPolicy`: a :class:`Policy` that also answers :meth:`~RequestPolicy.for_request`,
  one consistent :class:`PolicyView` per request (a database policy reads its revision once per
  request, not once per tool), and :attr:`~RequestPolicy.per_user` (whether grants differ by caller).
* :class:`PolicyView`: what one caller may see and do in one request: ``evaluate(tool)``,
  ``visible(tool)`` (listings and search of tools), ``catalog_visible(item)`` (prompts, resources and
  templates: grants decide, definition pins apply to tools only) and ``visible_key`` (the hashable
  identity of ``visible`` under which a search mask may be cached, or ``None``).

Implementations: the pure ones here and in :mod:`registry.permissions` subclass :class:`PurePolicy`
(:class:`AllowAll`, :class:`PatternPolicy`, grants, pins); the stateful layers live in
:mod:`host.access` (the permission store, open access, the local admin, the call-scoped cache).
Wrappers delegate each method by name; nothing is probed with ``getattr``.
"""

from __future__ import annotations

import enum
import fnmatch
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from registry.safety.taint import TaintDecision
from registry.tool import Risk, ToolRecord

__all__ = [
    "ANONYMOUS",
    "AllowAll",
    "Decision",
    "Effect",
    "PatternPolicy",
    "Policy",
    "PolicyView",
    "Principal",
    "PurePolicy",
    "RequestPolicy",
    "StaticView",
    "matches_pattern",
]


@dataclass(frozen=True)
class Principal:
    """The caller a decision is made for.

    Attributes:
        user: user id (``"local"`` for the single-user CLI).
        roles: names of the user's roles.
        key_id: id of the API key that authenticated the request, if any.
        actor: who issued the call when it is not the user themself (an admin's call as the user;
            the user's grants apply, the audit and approvals name both).
    """

    user: str = "local"
    roles: tuple[str, ...] = ()
    key_id: str | None = None
    actor: str | None = None

    @property
    def recorded(self) -> str:
        """The caller as audits and approvals name them: ``"root as bob"`` for an admin's call as
        ``bob``, else the user."""
        return f"{self.actor} as {self.user}" if self.actor and self.actor != self.user else self.user


ANONYMOUS = Principal(user="local")
"""The principal used when no authentication is configured."""


class Effect(str, enum.Enum):
    """Outcome of a policy evaluation."""

    ALLOW = "allow"
    DENY = "deny"
    APPROVAL = "approval"


@dataclass(frozen=True)
class Decision:
    """A policy verdict.

    Attributes:
        effect: allow, deny or approval (allowed only after a human approves).
        reason: why, for logs and admins (never shown to the model for denials).
        rule: identifier of the rule that decided (e.g. ``"deny:orders__*"``), or ``None``.
        taint: the session-taint decision the caller's grants set for this tool (see
            :mod:`registry.permissions`, "Taint per grant"), or ``None``: the config rule applies.
        taint_rule: the grant that set ``taint`` (e.g. ``"allow:web__*@role:ops"``), else ``None``.
    """

    effect: Effect
    reason: str = ""
    rule: str | None = None
    taint: TaintDecision | None = None
    taint_rule: str | None = None

    @property
    def visible(self) -> bool:
        """Whether the tool may appear in listings and search (allow or approval)."""
        return self.effect is not Effect.DENY


@runtime_checkable
class Policy(Protocol):
    """Decides what a principal may do with a tool. Must be pure and fast (called per tool per listing)."""

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        """Return the decision for ``principal`` on ``tool``."""
        ...


class PolicyView(Protocol):
    """What one caller may see and do in one request (see module docstring).

    Obtained from :meth:`RequestPolicy.for_request`; immutable, so one view serves a whole request
    (a listing of 10,000 tools costs one revision read).
    """

    @property
    def principal(self) -> Principal:
        """The caller this view decides for."""
        ...

    @property
    def visible_key(self) -> Hashable | None:
        """Hashable identity of :meth:`visible` (caller + policy revision) for caching a search mask
        (``SearchIndex.search(visible_key=...)``); ``None``: do not cache."""
        ...

    def evaluate(self, tool: ToolRecord) -> Decision:
        """The decision for this view's caller on ``tool`` (grants, then definition pins)."""
        ...

    def visible(self, tool: ToolRecord) -> bool:
        """Whether ``tool`` may appear in ``tools/list`` and ``tool_search`` (allow or approval)."""
        ...

    def catalog_visible(self, item: ToolRecord) -> bool:
        """Whether a prompt, resource or resource template (as a pseudo tool record of its server)
        may be seen and used: the grants decide; definition pins apply to tools only."""
        ...


class RequestPolicy(Policy, Protocol):
    """A :class:`Policy` that gives one consistent :class:`PolicyView` per request (module docstring)."""

    @property
    def per_user(self) -> bool:
        """Whether decisions depend on who calls (grants per user); ``False`` for open access and
        allow-all, where a call "as user X" would mean nothing."""
        ...

    def for_request(self, principal: Principal) -> PolicyView:
        """The view of ``principal`` for one request. Raises what :meth:`evaluate` raises (e.g. a
        store error when the permission database is down)."""
        ...


@dataclass(frozen=True)
class StaticView:
    """The :class:`PolicyView` of a :class:`PurePolicy` (decisions never change under it)."""

    policy: PurePolicy
    principal: Principal

    @property
    def visible_key(self) -> Hashable | None:
        return self.policy.view_key(self.principal)

    def evaluate(self, tool: ToolRecord) -> Decision:
        return self.policy.evaluate(self.principal, tool)

    def visible(self, tool: ToolRecord) -> bool:
        return self.policy.evaluate(self.principal, tool).visible

    def catalog_visible(self, item: ToolRecord) -> bool:
        return self.policy.catalog_decision(self.principal, item).visible


class PurePolicy:
    """Base of the pure policies: subclasses implement :meth:`evaluate`; this makes them a
    :class:`RequestPolicy` (their view is a :class:`StaticView`).

    Override :meth:`catalog_decision` when prompts and resources are decided differently from tools
    (definition pins), :meth:`view_key` when the policy is immutable and hashable (search masks may
    then be cached), and :attr:`per_user` when grants differ by caller.
    """

    @property
    def per_user(self) -> bool:
        """See :attr:`RequestPolicy.per_user` (default ``False``)."""
        return False

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        """Return the decision for ``principal`` on ``tool``."""
        raise NotImplementedError

    def catalog_decision(self, principal: Principal, item: ToolRecord) -> Decision:
        """The decision for a prompt, resource or template (default: as for a tool)."""
        return self.evaluate(principal, item)

    def view_key(self, principal: Principal) -> Hashable | None:
        """The :attr:`PolicyView.visible_key` of ``principal``'s view (default ``None``: not cached)."""
        return None

    def for_request(self, principal: Principal) -> StaticView:
        return StaticView(self, principal)


class AllowAll(PurePolicy):
    """Allows everything (single-user, trusted setups)."""

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        return Decision(Effect.ALLOW, "allow-all policy", "allow-all")

    def view_key(self, principal: Principal) -> Hashable:
        return (principal, "allow-all")


def matches_pattern(pattern: str, tool: ToolRecord) -> bool:
    """Whether a grant pattern covers ``tool``.

    Forms: ``server:NAME`` (every tool of server ``NAME``); otherwise an fnmatch-style
    glob over the qualified name, matched case-sensitively (``orders__*``, ``git__git_status``, ``*``).
    """
    if pattern.startswith("server:"):
        return tool.server == pattern[len("server:") :]
    return fnmatch.fnmatchcase(tool.qualified_name, pattern)


@dataclass(frozen=True)
class PatternPolicy(PurePolicy):
    """Config-driven policy: deny patterns win, then allow patterns, then a risk ceiling.

    Attributes:
        allow: patterns that grant access (default ``("*",)``: everything).
        deny: patterns that refuse access; checked first.
        max_risk: tools above this risk are denied.
        approval_risk: tools at or above this risk need approval (``None``: never).
    """

    allow: tuple[str, ...] = ("*",)
    deny: tuple[str, ...] = ()
    max_risk: Risk = Risk.DESTRUCTIVE
    approval_risk: Risk | None = None

    def view_key(self, principal: Principal) -> Hashable:
        return (principal, self)  # frozen and hashable: decisions never change under one instance

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        for pat in self.deny:
            if matches_pattern(pat, tool):
                return Decision(Effect.DENY, f"matches deny pattern {pat!r}", f"deny:{pat}")
        if tool.risk > self.max_risk:
            return Decision(
                Effect.DENY, f"risk {tool.risk.value} exceeds max_risk {self.max_risk.value}", "max_risk"
            )
        for pat in self.allow:
            if matches_pattern(pat, tool):
                if self.approval_risk is not None and tool.risk >= self.approval_risk:
                    return Decision(Effect.APPROVAL, f"risk {tool.risk.value} needs approval", f"allow:{pat}")
                return Decision(Effect.ALLOW, f"matches allow pattern {pat!r}", f"allow:{pat}")
        return Decision(Effect.DENY, "no allow pattern matches", None)

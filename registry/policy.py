"""Authorization policy interface: who may see and call which tool.

A :class:`Policy` is a pure function of a :class:`Principal` (the caller) and a
:class:`~registry.tool.ToolRecord`, returning a :class:`Decision`: ``allow``, ``deny`` or
``approval`` (allowed once a human approves), with a human-readable reason and the rule that
decided. The same policy filters ``tools/list``, ``tool_search`` and ``call_tool`` so that
what a caller can see and what they can run never diverge (bug case BR-26).

Shipped here: :class:`AllowAll` and :class:`PatternPolicy` (config-driven allow/deny glob
patterns plus a maximum risk). Per-user grants stored in a database build on the same
interface.
"""

from __future__ import annotations

import enum
import fnmatch
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from registry.tool import Risk, ToolRecord

__all__ = [
    "ANONYMOUS",
    "AllowAll",
    "Decision",
    "Effect",
    "PatternPolicy",
    "Policy",
    "Principal",
    "matches_pattern",
]


@dataclass(frozen=True)
class Principal:
    """The caller a decision is made for.

    Attributes:
        user: user id (``"local"`` for the single-user CLI).
        roles: names of the user's roles.
        key_id: id of the API key that authenticated the request, if any.
    """

    user: str = "local"
    roles: tuple[str, ...] = ()
    key_id: str | None = None


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
    """

    effect: Effect
    reason: str = ""
    rule: str | None = None

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


class AllowAll:
    """Allows everything (single-user, trusted setups)."""

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        return Decision(Effect.ALLOW, "allow-all policy", "allow-all")


def matches_pattern(pattern: str, tool: ToolRecord) -> bool:
    """Whether a grant pattern covers ``tool``.

    Forms: ``server:NAME`` (every tool of server ``NAME``); otherwise an fnmatch-style
    glob over the qualified name, matched case-sensitively (``orders__*``, ``git__git_status``, ``*``).
    """
    if pattern.startswith("server:"):
        return tool.server == pattern[len("server:") :]
    return fnmatch.fnmatchcase(tool.qualified_name, pattern)


@dataclass(frozen=True)
class PatternPolicy:
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

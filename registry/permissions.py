"""Per-user grants: the pure permission model behind toolhost's access control.

A :class:`Grant` is ``allow`` or ``deny`` for a *pattern* over tools, with a risk ceiling
(``max_risk``) and an approval setting. Users have their own grants plus the grants of their
roles (:class:`Role`). :class:`GrantPolicy` implements :class:`registry.policy.Policy`:

1. Unknown user → ``deny`` (rule ``"unknown-user"``).
2. Any matching ``deny`` grant → ``deny`` (deny wins over allow, whatever the order).
3. No matching ``allow`` grant → ``deny`` (rule ``None``: no grant, no access).
4. Matching ``allow`` grants whose ``max_risk`` is below the tool's risk do not count; when none
   is left → ``deny`` (rule ``"max_risk:<the highest matching grant>"``).
5. Among the remaining allow grants, the first that needs no approval decides ``allow``;
   otherwise the first decides ``approval``. A grant's ``approval`` is ``True`` (always ask),
   ``False`` (never ask) or ``None`` (the default: ask only for ``destructive`` tools).

Taint per grant: an allow grant may set the session-taint decision (``taint``: ``allow``,
``approve`` or ``deny``, see :mod:`registry.safety.taint`) for the tools it covers — what happens
when one of them is an *egress* call after private and untrusted results in the same session. For
the tool being called, the caller's *covering* allow grants (pattern matches, tool risk within
``max_risk``; own and role grants alike) that set ``taint`` decide:

* a grant naming exactly this tool (pattern == qualified name, no wildcard) is the most specific
  word an admin can say about it, so exact grants win over globs and ``server:NAME`` grants;
* among the grants of the same specificity, the strictest wins (``deny`` > ``approve`` >
  ``allow``): one role relaxing a broad pattern must not loosen what another grant tightened;
* no covering grant sets ``taint``: the config rule (``toolhost.taint``, default ``approve``).

The result is :attr:`registry.policy.Decision.taint` with the deciding grant in
:attr:`~registry.policy.Decision.taint_rule`. A deny grant cannot set ``taint`` (it refuses the
call anyway). Policies without grants (open access, ``--auth off``, the local admin) leave
``taint`` unset, so the config rule applies.

Patterns (:func:`validate_pattern`): ``server:NAME`` (every tool of server ``NAME``, exact), or a
glob over qualified names (``*``, ``?``, ``[seq]``, ``[!seq]``) made only of the characters a
qualified name may contain (``[A-Za-z0-9_-]``). Matching is exact and case-sensitive, so case
changes and look-alike Unicode never match a grant they should not (qualified names are ASCII by
construction, see :mod:`registry.naming`).

Prompts, resources and resource templates are judged by the same grants through a
read-risk stand-in record (:meth:`registry.catalog.CatalogItem.as_record`) whose name is the
item's *grant name*: a prompt's qualified name (``git__review``), or ``<prefix>__<resource name>``
for a resource or template (``docs__readme``). So ``server:NAME`` and ``prefix__*`` cover all of a
server's tools, prompts and resources alike, a deny glob hides matching prompts/resources too, and
``max_risk``/approval never restrict them (they are ``read`` and never need approval).

Source: a definition changed after approval is held; a grant is enforced on every call, not only
in listings (a denied name answers like an unknown one).
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from registry.errors import InvalidGrantPattern
from registry.policy import Decision, Effect, Principal, PurePolicy
from registry.safety.taint import TaintDecision
from registry.tool import Risk, ToolRecord

__all__ = [
    "Grant",
    "GrantEffect",
    "GrantPolicy",
    "PinnedPolicy",
    "Role",
    "UserAccess",
    "grant_matches",
    "needs_approval",
    "taint_grant",
    "validate_pattern",
]

_GLOB = re.compile(r"^[A-Za-z0-9_\-*?\[\]!]{1,128}$")
_SERVER_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_WILDCARDS = frozenset("*?[")


class GrantEffect(str, enum.Enum):
    """Whether a grant gives or refuses access."""

    ALLOW = "allow"
    DENY = "deny"


def validate_pattern(pattern: str) -> str:
    """Check a grant pattern and return it unchanged.

    Accepted: ``server:NAME`` with ``NAME`` made of ``[A-Za-z0-9._-]`` (exact server name), or a
    glob of ``[A-Za-z0-9_-]`` plus ``* ? [ ] !`` with balanced, non-empty brackets, up to 128
    characters.

    Raises:
        InvalidGrantPattern: naming the problem and the accepted forms.
    """
    if not isinstance(pattern, str) or not pattern:
        raise InvalidGrantPattern(str(pattern), "empty pattern")
    if pattern.startswith("server:"):
        name = pattern[len("server:") :]
        if not _SERVER_NAME.fullmatch(name):
            raise InvalidGrantPattern(
                pattern, "server:NAME needs an exact server name of letters, digits, '.', '_' or '-'"
            )
        return pattern
    if ":" in pattern:
        raise InvalidGrantPattern(pattern, "the only prefixed form is server:NAME")
    if not _GLOB.fullmatch(pattern):
        raise InvalidGrantPattern(
            pattern, "qualified-name globs may only use ASCII letters, digits, '_', '-' and the wildcards * ? [ ] !"
        )
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[":
            close = pattern.find("]", i + 1)
            body = pattern[i + 1 : close] if close != -1 else ""
            if close == -1 or body in ("", "!") or "[" in body:
                raise InvalidGrantPattern(pattern, "unbalanced or empty [...] set")
            i = close + 1
            continue
        if c == "]":
            raise InvalidGrantPattern(pattern, "']' without a matching '['")
        if c == "!":
            raise InvalidGrantPattern(pattern, "'!' is only allowed right after '[' (negated set)")
        i += 1
    return pattern


@dataclass(frozen=True)
class Grant:
    """One permission rule.

    Attributes:
        effect: allow or deny.
        pattern: ``server:NAME`` or a qualified-name glob (validated on construction).
        max_risk: the highest tool risk this allow grant covers (ignored for deny grants).
        approval: ``True`` always ask a human, ``False`` never, ``None`` ask for destructive tools.
        source: where the grant comes from, ``"user:alice"`` or ``"role:ops"`` (for the rule id).
        id: database id, when stored.
        taint: the session-taint decision for the tools this allow grant covers (module
            docstring), ``None``: the config rule.

    Raises:
        InvalidGrantPattern: for a bad pattern.
        ValueError: a deny grant with ``taint``, or an unknown taint decision.
    """

    effect: GrantEffect
    pattern: str
    max_risk: Risk = Risk.DESTRUCTIVE
    approval: bool | None = None
    source: str = ""
    id: int | None = None
    taint: TaintDecision | None = None
    _regex: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "effect", GrantEffect(self.effect))
        object.__setattr__(self, "max_risk", Risk(self.max_risk))
        validate_pattern(self.pattern)
        if self.taint is not None:
            object.__setattr__(self, "taint", TaintDecision(self.taint))
            if self.effect is GrantEffect.DENY:
                raise ValueError("a deny grant refuses every call; a taint decision applies to allow grants only")
        if not self.pattern.startswith("server:") and _WILDCARDS & set(self.pattern):
            object.__setattr__(self, "_regex", re.compile(fnmatch.translate(self.pattern)))

    @property
    def rule(self) -> str:
        """Identifier of this grant in decisions and the audit log, e.g. ``allow:orders__*@role:ops``."""
        where = f"@{self.source}" if self.source else ""
        return f"{self.effect.value}:{self.pattern}{where}"

    @property
    def exact(self) -> bool:
        """Whether the pattern names one tool (no wildcard, not ``server:NAME``)."""
        return self._regex is None and not self.pattern.startswith("server:")

    def matches(self, tool: ToolRecord) -> bool:
        """Whether the pattern covers ``tool`` (exact, case-sensitive)."""
        return grant_matches(self, tool.qualified_name, tool.server)


def grant_matches(grant: Grant, qualified_name: str, server: str) -> bool:
    """Pattern test on raw names: ``server:NAME`` compares ``server``; globs match ``qualified_name``."""
    p = grant.pattern
    if p.startswith("server:"):
        return server == p[7:]
    if grant._regex is None:
        return qualified_name == p
    return grant._regex.match(qualified_name) is not None


_STRICTNESS = {TaintDecision.ALLOW: 0, TaintDecision.APPROVE: 1, TaintDecision.DENY: 2}


def taint_grant(covering: Iterable[Grant]) -> Grant | None:
    """The grant whose ``taint`` decides among the allow grants ``covering`` a tool (module
    docstring): exact-name grants before patterns, then the strictest; ``None`` when none sets it."""
    setters = [g for g in covering if g.taint is not None]
    pool = [g for g in setters if g.exact] or setters
    return max(pool, key=lambda g: _STRICTNESS[g.taint], default=None)  # type: ignore[index]


def needs_approval(grant: Grant, risk: Risk) -> bool:
    """Whether an allow ``grant`` requires approval for a tool of ``risk`` (default: destructive only)."""
    if grant.approval is None:
        return risk is Risk.DESTRUCTIVE
    return grant.approval


@dataclass(frozen=True)
class Role:
    """A named set of grants.

    Attributes:
        name: role name.
        grants: the role's grants (their ``source`` should be ``role:<name>``).
        description: free text for admins.
    """

    name: str
    grants: tuple[Grant, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class UserAccess:
    """What one user is granted: own grants and role names (resolved against the policy's roles)."""

    grants: tuple[Grant, ...] = ()
    roles: tuple[str, ...] = ()


class GrantPolicy(PurePolicy):
    """Per-user grant evaluation (see module docstring for the exact rules).

    Args:
        users: ``{user: UserAccess}``; a user missing here is denied everything.
        roles: ``{role name: Role}``; unknown role names of a user grant nothing.

    The user's roles come from ``users`` (the store), never from ``Principal.roles``, so a caller
    cannot widen its own access. Immutable after construction; per-user deny/allow lists and glob
    regexes are precomputed, so :meth:`evaluate` is a few comparisons per grant.
    """

    MAX_MEMO = 200_000
    """Most memoized decisions kept (about 40 MB at most); the memo is cleared when full."""

    def __init__(self, users: Mapping[str, UserAccess], roles: Mapping[str, Role] | None = None) -> None:
        roles = dict(roles or {})
        self._memo: dict[tuple[str, str, str, Risk], Decision] = {}
        self._users: dict[str, tuple[tuple[Grant, ...], tuple[Grant, ...]]] = {}
        for user, access in users.items():
            grants: list[Grant] = list(access.grants)
            for role_name in access.roles:
                role = roles.get(role_name)
                if role is not None:
                    grants.extend(role.grants)
            denies = tuple(g for g in grants if g.effect is GrantEffect.DENY)
            allows = tuple(g for g in grants if g.effect is GrantEffect.ALLOW)
            self._users[user] = (denies, allows)

    @classmethod
    def from_grants(
        cls,
        grants_by_user: Mapping[str, Iterable[Grant]],
        roles: Iterable[Role] = (),
        user_roles: Mapping[str, Sequence[str]] | None = None,
    ) -> GrantPolicy:
        """Convenience constructor: ``{user: [Grant, ...]}``, roles, and ``{user: [role, ...]}``."""
        user_roles = user_roles or {}
        names = set(grants_by_user) | set(user_roles)
        users = {u: UserAccess(tuple(grants_by_user.get(u, ())), tuple(user_roles.get(u, ()))) for u in names}
        return cls(users, {r.name: r for r in roles})

    @property
    def per_user(self) -> bool:
        return True

    def users(self) -> list[str]:
        """Known user names, sorted."""
        return sorted(self._users)

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        """Decision for ``principal`` on ``tool``: allow, deny or approval, with the deciding rule.

        Memoized per ``(user, qualified_name, server, risk)`` (the only inputs), so listing and
        searching the same tools again costs a dict lookup; the memo holds at most
        :attr:`MAX_MEMO` entries and is dropped with the policy when grants change.
        """
        key = (principal.user, tool.qualified_name, tool.server, tool.risk)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        decision = self._decide(principal, tool)
        if len(self._memo) >= self.MAX_MEMO:
            self._memo.clear()
        self._memo[key] = decision
        return decision

    def clear_memo(self) -> None:
        """Forget memoized decisions (for benchmarks; results never change)."""
        self._memo.clear()

    def _decide(self, principal: Principal, tool: ToolRecord) -> Decision:
        entry = self._users.get(principal.user)
        if entry is None:
            return Decision(Effect.DENY, f"unknown user {principal.user!r}", "unknown-user")
        denies, allows = entry
        qn, server, risk = tool.qualified_name, tool.server, tool.risk
        for g in denies:
            if grant_matches(g, qn, server):
                return Decision(Effect.DENY, f"denied by {g.rule}", g.rule)
        chosen: Grant | None = None
        pending: Grant | None = None
        ceiling: Grant | None = None
        covering: list[Grant] = []
        for g in allows:
            if not grant_matches(g, qn, server):
                continue
            if risk > g.max_risk:
                if ceiling is None or g.max_risk > ceiling.max_risk:
                    ceiling = g
                continue
            covering.append(g)
            if not needs_approval(g, risk):
                chosen = chosen or g
            else:
                pending = pending or g
        taint = taint_grant(covering)
        taint_kw = {"taint": taint.taint, "taint_rule": taint.rule} if taint is not None else {}
        if chosen is not None:
            return Decision(Effect.ALLOW, f"allowed by {chosen.rule}", chosen.rule, **taint_kw)
        if pending is not None:
            return Decision(Effect.APPROVAL, f"{pending.rule} requires approval for {risk.value} tools", pending.rule,
                            **taint_kw)
        if ceiling is not None:
            return Decision(
                Effect.DENY,
                f"risk {risk.value} exceeds max_risk {ceiling.max_risk.value} of {ceiling.rule}",
                f"max_risk:{ceiling.rule}",
            )
        return Decision(Effect.DENY, "no grant covers this tool", None)

    def visible(self, principal: Principal, tool: ToolRecord) -> bool:
        """Whether ``tool`` may be listed/searched for ``principal`` (allow or approval)."""
        return self.evaluate(principal, tool).visible


class PinnedPolicy(PurePolicy):
    """A policy plus definition pins: tools whose served definition is not the pinned one are denied.

    Args:
        inner: the grant policy; it decides first, so a caller without a grant learns nothing
            about pins (the tool stays "unknown" to them).
        pins: ``{qualified_name: (status, pinned_hash)}``; status ``trusted``, ``changed`` or ``held``.
        hold_unpinned: deny tools that have no pin at all (default ``False``: allowed, the host
            pins them on first sight).

    A tool passes when its pin is ``trusted`` *and* ``tool.definition_hash`` equals the pinned hash,
    so a changed definition is refused even before the store has recorded the change.
    Denials carry rule ``"pin:changed"`` or ``"pin:held"``.
    """

    def __init__(
        self, inner: PurePolicy, pins: Mapping[str, tuple[str, str | None]], *, hold_unpinned: bool = False
    ) -> None:
        self.inner = inner
        self.pins = pins
        self.hold_unpinned = hold_unpinned

    @property
    def per_user(self) -> bool:
        return self.inner.per_user

    def catalog_decision(self, principal: Principal, item: ToolRecord) -> Decision:
        """Prompts, resources and templates: the inner (grant) decision; pins hold tools only."""
        return self.inner.catalog_decision(principal, item)

    def pin_blocks(self, tool: ToolRecord) -> str | None:
        """``"pin:changed"`` / ``"pin:held"`` when the pin refuses ``tool``, else ``None``."""
        pin = self.pins.get(tool.qualified_name)
        if pin is None:
            return "pin:held" if self.hold_unpinned else None
        status, pinned = pin
        if status == "held" or pinned is None:
            return "pin:held"
        if status != "trusted" or pinned != tool.definition_hash:
            return "pin:changed"
        return None

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        """The inner decision, turned into ``deny`` when the pin refuses the tool."""
        decision = self.inner.evaluate(principal, tool)
        if decision.effect is Effect.DENY:
            return decision
        blocked = self.pin_blocks(tool)
        if blocked is not None:
            what = "is new and held" if blocked == "pin:held" else "changed since it was approved"
            return Decision(
                Effect.DENY,
                f"definition of {tool.qualified_name} {what}; an admin must review it "
                f"(`toolhost pins diff {tool.qualified_name}`) and accept it "
                f"(`toolhost pins accept {tool.qualified_name} --hash HASH`)",
                blocked,
            )
        return decision

"""GrantPolicy: exhaustive tables against a reference oracle, hypothesis properties, pattern validation."""

from __future__ import annotations

import fnmatch
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.errors import InvalidGrantPattern
from registry.permissions import Grant, GrantEffect, GrantPolicy, PinnedPolicy, Role, UserAccess, validate_pattern
from registry.policy import Decision, Effect, Policy, Principal
from registry.tool import Risk, ToolAnnotations, ToolDefinition, ToolOverrides, ToolRecord, build_record

ALICE = Principal("alice")
RISKS = (Risk.READ, Risk.WRITE, Risk.DESTRUCTIVE)


def rec(qn: str, risk: Risk, server: str | None = None) -> ToolRecord:
    return build_record(
        server=server or qn.partition("__")[0],
        qualified_name=qn,
        definition=ToolDefinition(name=qn.partition("__")[2], annotations=ToolAnnotations()),
        overrides=ToolOverrides(risk=risk),
    )


def policy_of(*grants: Grant, user: str = "alice") -> GrantPolicy:
    return GrantPolicy({user: UserAccess(tuple(grants))})


def oracle_matches(pattern: str, tool: ToolRecord) -> bool:
    if pattern.startswith("server:"):
        return tool.server == pattern[7:]
    return fnmatch.fnmatchcase(tool.qualified_name, pattern)


def oracle(grants: list[Grant], tool: ToolRecord) -> Effect:
    """The grant rules written as plainly as possible (set semantics, no ordering)."""
    if any(g.effect is GrantEffect.DENY and oracle_matches(g.pattern, tool) for g in grants):
        return Effect.DENY
    permitted = [
        g
        for g in grants
        if g.effect is GrantEffect.ALLOW and oracle_matches(g.pattern, tool) and tool.risk.level <= g.max_risk.level
    ]
    if not permitted:
        return Effect.DENY

    def asks(g: Grant) -> bool:
        return g.approval if g.approval is not None else tool.risk is Risk.DESTRUCTIVE

    return Effect.ALLOW if any(not asks(g) for g in permitted) else Effect.APPROVAL


TOOLS = [rec(qn, r) for qn in ("orders__get", "orders__cancel", "git__git_status", "git__git_reset") for r in RISKS]
PATTERNS = ("*", "orders__*", "git__git_status", "server:git", "orders__get", "Orders__*", "*__git_?eset")
GRANT_POOL = [
    Grant(effect, p, risk, approval)
    for p in PATTERNS
    for effect in GrantEffect
    for risk in RISKS
    for approval in (None, True, False)
]


def test_exhaustive_single_and_pairs_match_the_oracle() -> None:
    """Every grant alone and every ordered pair of grants, on every tool and risk (≈ 200k decisions)."""
    checked = 0
    for combo in itertools.chain(((g,) for g in GRANT_POOL), itertools.product(GRANT_POOL, repeat=2)):
        pol = policy_of(*combo)
        for tool in TOOLS:
            d = pol.evaluate(ALICE, tool)
            assert d.effect is oracle(list(combo), tool), (combo, tool.qualified_name, tool.risk, d)
            checked += 1
    assert checked == (len(GRANT_POOL) + len(GRANT_POOL) ** 2) * len(TOOLS)


def test_rule_names_the_deciding_grant() -> None:
    allow = Grant("allow", "orders__*", Risk.WRITE, source="user:alice")
    deny = Grant("deny", "orders__cancel", source="role:ops")
    pol = policy_of(allow, deny)
    assert pol.evaluate(ALICE, rec("orders__get", Risk.READ)) == Decision(
        Effect.ALLOW, "allowed by allow:orders__*@user:alice", "allow:orders__*@user:alice"
    )
    assert pol.evaluate(ALICE, rec("orders__cancel", Risk.READ)).rule == "deny:orders__cancel@role:ops"
    ceiling = pol.evaluate(ALICE, rec("orders__get", Risk.DESTRUCTIVE))
    assert (ceiling.effect, ceiling.rule) == (Effect.DENY, "max_risk:allow:orders__*@user:alice")
    none = pol.evaluate(ALICE, rec("git__git_status", Risk.READ))
    assert (none.effect, none.rule) == (Effect.DENY, None)


@pytest.mark.parametrize(
    ("approval", "risk", "expected"),
    [
        (None, Risk.READ, Effect.ALLOW),
        (None, Risk.WRITE, Effect.ALLOW),
        (None, Risk.DESTRUCTIVE, Effect.APPROVAL),  # destructive needs approval by default
        (False, Risk.DESTRUCTIVE, Effect.ALLOW),  # ... unless a grant says otherwise
        (True, Risk.READ, Effect.APPROVAL),
        (True, Risk.DESTRUCTIVE, Effect.APPROVAL),
    ],
)
def test_approval_defaults(approval: bool | None, risk: Risk, expected: Effect) -> None:
    assert policy_of(Grant("allow", "*", approval=approval)).evaluate(ALICE, rec("a__b", risk)).effect is expected


def test_allow_without_approval_beats_allow_with_approval() -> None:
    pol = policy_of(Grant("allow", "*", approval=True), Grant("allow", "a__*", approval=False))
    assert pol.evaluate(ALICE, rec("a__b", Risk.DESTRUCTIVE)).rule == "allow:a__*"


def test_unknown_user_and_roles() -> None:
    ops = Role("ops", (Grant("allow", "server:git", Risk.WRITE, source="role:ops"),))
    pol = GrantPolicy({"alice": UserAccess((), ("ops", "ghost-role")), "bob": UserAccess()}, {"ops": ops})
    assert pol.evaluate(ALICE, rec("git__git_status", Risk.READ)).rule == "allow:server:git@role:ops"
    assert pol.evaluate(Principal("bob"), rec("git__git_status", Risk.READ)).effect is Effect.DENY
    # roles claimed by the principal are ignored: only the store's memberships count
    assert pol.evaluate(Principal("bob", roles=("ops",)), rec("git__git_status", Risk.READ)).effect is Effect.DENY
    d = pol.evaluate(Principal("mallory"), rec("git__git_status", Risk.READ))
    assert (d.effect, d.rule) == (Effect.DENY, "unknown-user")
    assert isinstance(pol, Policy)


def test_server_pattern_is_exact_and_case_sensitive() -> None:
    pol = policy_of(Grant("allow", "server:git"))
    assert pol.evaluate(ALICE, rec("git__x", Risk.READ, server="git")).effect is Effect.ALLOW
    assert pol.evaluate(ALICE, rec("Git__x", Risk.READ, server="Git")).effect is Effect.DENY
    assert pol.evaluate(ALICE, rec("gitx__x", Risk.READ, server="gitx")).effect is Effect.DENY


@pytest.mark.parametrize(
    "pattern",
    ["*", "orders__*", "git__git_status", "server:git", "server:my.server-1", "a?c", "a[bc]d", "a[!x]*", "x-y__z"],
)
def test_valid_patterns(pattern: str) -> None:
    assert validate_pattern(pattern) == pattern
    Grant("allow", pattern)


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("", "empty"),
        ("server:", "server:NAME"),
        ("server:a b", "server:NAME"),
        ("server:git*", "server:NAME"),
        ("tool:x", "only prefixed form"),
        ("orders__cancel order", "ASCII"),
        ("ｏrders__*", "ASCII"),  # fullwidth o
        ("оrders__*", "ASCII"),  # Cyrillic o
        ("a[", "unbalanced"),
        ("a[]", "unbalanced"),
        ("a[!]", "unbalanced"),
        ("a]b", "without a matching"),
        ("a!b", "only allowed right after"),
        ("x" * 129, "ASCII"),
    ],
)
def test_invalid_patterns(pattern: str, fragment: str) -> None:
    with pytest.raises(InvalidGrantPattern) as info:
        Grant("allow", pattern)
    assert fragment in str(info.value)
    assert info.value.pattern == pattern


# -- hypothesis ----------------------------------------------------------------------------------
NAME_CHARS = "abcAB_-0"
names = st.text(alphabet=NAME_CHARS, min_size=1, max_size=6).map(lambda s: f"s{s[:2]}__{s}")
globs = st.text(alphabet=NAME_CHARS + "*?", min_size=1, max_size=6)
patterns = st.one_of(globs, names, st.sampled_from(["server:sa", "server:sb", "*", "s*__*"]))
risks = st.sampled_from(RISKS)
grants = st.builds(Grant, st.sampled_from(list(GrantEffect)), patterns, risks, st.sampled_from([None, True, False]))
tools = st.builds(lambda n, r: rec(n, r), names, risks)


@settings(max_examples=400, deadline=None)
@given(st.lists(grants, max_size=6), tools)
def test_matches_oracle_and_is_order_independent(gs: list[Grant], tool: ToolRecord) -> None:
    effect = policy_of(*gs).evaluate(ALICE, tool).effect
    assert effect is oracle(gs, tool)
    assert policy_of(*reversed(gs)).evaluate(ALICE, tool).effect is effect


@settings(max_examples=300, deadline=None)
@given(st.lists(grants, max_size=6), tools, patterns)
def test_deny_wins(gs: list[Grant], tool: ToolRecord, pattern: str) -> None:
    deny = Grant("deny", pattern)
    d = policy_of(*gs, deny).evaluate(ALICE, tool)
    if deny.matches(tool):
        assert d.effect is Effect.DENY and d.rule is not None and d.rule.startswith("deny:")


@settings(max_examples=300, deadline=None)
@given(st.lists(grants, max_size=6), tools)
def test_risk_ceiling_holds_and_no_grant_no_access(gs: list[Grant], tool: ToolRecord) -> None:
    d = policy_of(*gs).evaluate(ALICE, tool)
    if d.effect is not Effect.DENY:
        assert any(g.effect is GrantEffect.ALLOW and g.matches(tool) and tool.risk <= g.max_risk for g in gs), (
            "allowed without a covering grant under its risk ceiling"
        )
    assert policy_of().evaluate(ALICE, tool).effect is Effect.DENY


_HOMOGLYPHS = {"a": "а", "c": "с", "e": "е", "o": "о", "s": "ѕ", "A": "Α", "B": "В"}


@settings(max_examples=300, deadline=None)
@given(names, risks, st.data())
def test_case_changes_and_lookalikes_never_match_an_exact_grant(name: str, risk: Risk, data) -> None:
    pol = policy_of(Grant("allow", name))
    assert pol.evaluate(ALICE, rec(name, risk)).visible
    swapped = name.swapcase()
    if swapped != name:
        assert not pol.evaluate(ALICE, rec(swapped, risk, server=name.partition("__")[0])).visible
    idx = [i for i, ch in enumerate(name) if ch in _HOMOGLYPHS]
    if idx:
        i = data.draw(st.sampled_from(idx))
        spoof = name[:i] + _HOMOGLYPHS[name[i]] + name[i + 1 :]
        assert not pol.evaluate(ALICE, rec(spoof, risk, server=name.partition("__")[0])).visible


# -- pins ------------------------------------------------------------------------------------------
def test_pinned_policy() -> None:
    tool = rec("a__b", Risk.READ)
    inner = policy_of(Grant("allow", "*"))
    ok = PinnedPolicy(inner, {"a__b": ("trusted", tool.definition_hash)})
    assert ok.evaluate(ALICE, tool).effect is Effect.ALLOW
    drifted = PinnedPolicy(inner, {"a__b": ("trusted", "0" * 64)})  # served hash differs from the pin
    assert drifted.evaluate(ALICE, tool).rule == "pin:changed"
    assert PinnedPolicy(inner, {"a__b": ("changed", tool.definition_hash)}).evaluate(ALICE, tool).rule == "pin:changed"
    assert PinnedPolicy(inner, {"a__b": ("held", None)}).evaluate(ALICE, tool).rule == "pin:held"
    assert PinnedPolicy(inner, {}).evaluate(ALICE, tool).effect is Effect.ALLOW
    assert PinnedPolicy(inner, {}, hold_unpinned=True).evaluate(ALICE, tool).rule == "pin:held"
    # a caller without a grant gets the grant denial, never the pin's (learns nothing about the tool)
    d = PinnedPolicy(policy_of(), {"a__b": ("changed", None)}).evaluate(ALICE, tool)
    assert (d.effect, d.rule) == (Effect.DENY, None)

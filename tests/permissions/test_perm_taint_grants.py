"""Taint per grant: an allow grant may set what happens to an egress call of the tools it covers
after private and untrusted results in the same session (allow / approve / deny).

Resolution (see :mod:`registry.permissions`): the caller's covering allow grants that set ``taint``
decide, a grant naming exactly the tool beats patterns, otherwise the strictest wins; with none,
the config rule (``toolhost.taint``). Tested on the pure model, the store on SQLite and PostgreSQL
(with the schema migration), the call path with the store's policy and its audit rows, the local
admin (config rule), and the CLI.
"""

from __future__ import annotations

import re

import anyio
import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from host.access import AccessControl
from host.access.gate import ApprovalGate
from host.access.local_admin import LocalAdminPolicy, local_admin_principal
from host.calls import ResultStatus
from host.pipeline import CallContext, Pipeline, TaintStage
from host.store import schema as s
from host.store.errors import InvalidValue
from host.store.migrations import SCHEMA_VERSION, migrate
from registry.permissions import Grant, GrantPolicy, Role, taint_grant
from registry.policy import AllowAll, Effect, Principal
from registry.safety import FlowGuard, TaintDecision, TaintRule
from servers.cli.app import app
from tests.pipeline.conftest import connect
from tests.pipeline.test_taint import trio  # read_file (private), fetch (untrusted), send_message (egress)

from .conftest import make_record

ALLOW, APPROVE, DENY = TaintDecision.ALLOW, TaintDecision.APPROVE, TaintDecision.DENY
POST = make_record("out__post_note", "write")


def policy(*grants: Grant, roles: tuple[Role, ...] = (), user_roles: tuple[str, ...] = ()) -> GrantPolicy:
    return GrantPolicy.from_grants({"alice": grants}, roles, {"alice": user_roles})


def decide(p: GrantPolicy, tool=POST):
    return p.evaluate(Principal(user="alice"), tool)


# -- the pure model ---------------------------------------------------------------------------------
def test_no_taint_on_any_grant_leaves_the_config_rule() -> None:
    d = decide(policy(Grant("allow", "*")))
    assert (d.effect, d.taint, d.taint_rule) == (Effect.ALLOW, None, None)


def test_the_strictest_pattern_grant_wins_over_own_and_role_grants() -> None:
    ops = Role("ops", (Grant("allow", "out__*", taint=DENY, source="role:ops"),))
    p = policy(Grant("allow", "*", taint=ALLOW, source="user:alice"),
               Grant("allow", "server:out", taint=APPROVE, source="user:alice"), roles=(ops,), user_roles=("ops",))
    d = decide(p)
    assert (d.taint, d.taint_rule) == (DENY, "allow:out__*@role:ops")
    # a grant without taint says nothing: the others still decide
    d = decide(policy(Grant("allow", "*", taint=ALLOW, source="user:alice"), Grant("allow", "out__*")))
    assert (d.taint, d.taint_rule) == (ALLOW, "allow:*@user:alice")


def test_a_grant_naming_exactly_the_tool_beats_patterns_even_when_laxer() -> None:
    p = policy(Grant("allow", "*", taint=DENY, source="user:alice"),
               Grant("allow", "out__post_note", taint=ALLOW, source="user:alice"))
    d = decide(p)
    assert (d.taint, d.taint_rule) == (ALLOW, "allow:out__post_note@user:alice")
    # the exact grant covers only its tool: another egress tool gets the pattern's deny
    other = decide(p, make_record("out__send_mail", "write"))
    assert (other.taint, other.taint_rule) == (DENY, "allow:*@user:alice")
    # two exact grants (own and role): the strictest of them
    ops = Role("ops", (Grant("allow", "out__post_note", taint=APPROVE, source="role:ops"),))
    d = decide(policy(*p._users["alice"][1], roles=(ops,), user_roles=("ops",)))
    assert (d.taint, d.taint_rule) == (APPROVE, "allow:out__post_note@role:ops")


def test_only_grants_that_cover_the_tool_decide() -> None:
    # the read-only grant does not cover a write tool, so its taint does not count
    p = policy(Grant("allow", "out__*", max_risk="read", taint=ALLOW, source="user:alice"),
               Grant("allow", "*", taint=DENY, source="user:alice"))
    assert decide(p).taint_rule == "allow:*@user:alice"
    # an approval-needing grant still carries its taint into the approval decision
    d = decide(policy(Grant("allow", "*", approval=True, taint=DENY, source="user:alice")))
    assert (d.effect, d.taint) == (Effect.APPROVAL, DENY)
    # a denied tool has no taint decision at all
    d = decide(policy(Grant("allow", "*", taint=ALLOW), Grant("deny", "out__*")))
    assert (d.effect, d.taint) == (Effect.DENY, None)


def test_a_deny_grant_cannot_set_taint_and_unknown_decisions_are_refused() -> None:
    with pytest.raises(ValueError, match="allow grants only"):
        Grant("deny", "out__*", taint=DENY)
    with pytest.raises(ValueError):
        Grant("allow", "out__*", taint="sometimes")
    assert taint_grant([]) is None


# -- the store (SQLite and PostgreSQL) ------------------------------------------------------------------
def test_store_keeps_taint_and_the_live_policy_decides_with_it(access: AccessControl) -> None:
    access.users.add("alice")
    access.roles.add("ops")
    access.users.assign_role("alice", "ops")
    g = access.grants.add("alice", "*", taint="allow")
    assert (g.taint, g.rule) == (ALLOW, "allow:*@user:alice")
    access.grants.add("ops", "out__*", kind="role", taint=TaintDecision.DENY)
    access.grants.add("alice", "files__*")
    listed = {x.pattern: x.taint for x in access.grants.list()}
    assert listed == {"*": ALLOW, "out__*": DENY, "files__*": None}
    d = access.evaluate(access.principal_for_user("alice"), POST)
    assert (d.effect, d.taint, d.taint_rule) == (Effect.ALLOW, DENY, "allow:out__*@role:ops")
    access.grants.add("alice", "out__post_note", taint="approve")
    d = access.evaluate(access.principal_for_user("alice"), POST)
    assert (d.taint, d.taint_rule) == (APPROVE, "allow:out__post_note@user:alice")


def test_store_refuses_a_bad_taint_with_a_clear_error(access: AccessControl) -> None:
    access.users.add("alice")
    with pytest.raises(InvalidValue, match="expected allow, approve or deny"):
        access.grants.add("alice", "*", taint="maybe")
    with pytest.raises(InvalidValue, match="set taint on an allow grant"):
        access.grants.add("alice", "*", effect="deny", taint="deny")
    assert access.grants.list() == []


def test_migration_adds_the_taint_column_and_keeps_existing_grants(access: AccessControl) -> None:
    access.users.add("alice")
    access.grants.add("alice", "out__*", max_risk="write")
    engine = access.store.engine
    with engine.begin() as conn:  # back to schema 5: no taint column (nor what later versions add)
        conn.execute(text("ALTER TABLE grants DROP COLUMN taint"))
        for column in ("disabled_at", "disabled_by", "disabled_reason"):
            conn.execute(text(f"ALTER TABLE users DROP COLUMN {column}"))
        conn.execute(s.schema_version.update().values(version=5))
    assert migrate(engine) == 5
    assert migrate(engine) == SCHEMA_VERSION
    (g,) = access.grants.list()
    assert (g.pattern, g.taint) == ("out__*", None)
    access.grants.add("alice", "*", taint="deny")
    assert {x.pattern: x.taint for x in access.grants.list()} == {"out__*": None, "*": DENY}


# -- the call path with the store's policy ------------------------------------------------------------
async def trifecta(tmp_path, pol, principal, *, rule=None):
    """Private read, untrusted read, egress in one session: the three results and the taint events."""
    events = []

    async def listener(event):
        events.append(event)

    async with connect({"trio": trio()}, tmp_path) as h:
        stage = TaintStage(FlowGuard(rule=rule), [listener])
        pipeline = Pipeline(h.registry, h.executor, pol, spill_dir=tmp_path / "spill", taint=stage)
        ctx = CallContext(principal=principal, conversation_id="conv", session_id="s1")
        calls = [("read_file", {"path": "/n.txt"}), ("fetch", {"url": "http://x/"}), ("send_message", {"text": "hi"})]
        with anyio.fail_after(20):
            results = [await pipeline.call(f"trio__{n}", a, ctx, call_id=f"c{i}") for i, (n, a) in enumerate(calls)]
        return results, events, [c[1] for c in h.executor.calls]


@pytest.mark.anyio
async def test_a_grant_deny_refuses_the_egress_call_and_the_audit_names_the_grant(tmp_path, access) -> None:
    access.users.add("alice")
    access.grants.add("alice", "trio__*")
    access.grants.add("alice", "trio__send_message", taint="deny")
    alice = access.principal_for_user("alice")
    results, events, ran = await trifecta(tmp_path, access, alice, rule=TaintRule(decision=ALLOW))
    assert [r.status for r in results] == [ResultStatus.OK, ResultStatus.OK, ResultStatus.PERMISSION_DENIED]
    assert "send_message" not in ran
    err = results[2].error
    assert err.details["taint_rule"] == "allow:trio__send_message@user:alice"
    assert "Decided by grant allow:trio__send_message@user:alice." in err.message
    (event,) = events
    assert (event.outcome, event.verdict.rule) == ("denied", "allow:trio__send_message@user:alice")
    await access.audit_taint(event)
    with access.store.engine.connect() as conn:
        got = conn.execute(text("SELECT rule, decision, status FROM audit WHERE action = 'taint'")).all()
    assert [tuple(r) for r in got] == [("taint:allow:trio__send_message@user:alice", "deny", "denied")]


@pytest.mark.anyio
async def test_a_grant_allow_lets_the_egress_call_run_past_a_strict_config_rule(tmp_path, access) -> None:
    access.users.add("alice")
    access.grants.add("alice", "trio__*", taint="allow")
    results, events, ran = await trifecta(tmp_path, access, access.principal_for_user("alice"),
                                          rule=TaintRule(decision=DENY))
    assert [r.status for r in results] == [ResultStatus.OK] * 3 and ran[-1] == "send_message"
    assert [(e.outcome, e.verdict.rule) for e in events] == [("allowed", "allow:trio__*@user:alice")]


@pytest.mark.anyio
async def test_grants_without_taint_and_open_access_use_the_config_rule(tmp_path, access) -> None:
    access.users.add("alice")
    access.grants.add("alice", "trio__*")
    results, events, _ = await trifecta(tmp_path, access, access.principal_for_user("alice"),
                                        rule=TaintRule(decision=DENY))
    assert results[2].status is ResultStatus.PERMISSION_DENIED
    assert results[2].error.details["taint_rule"] == "config"
    assert "Decided by the config rule toolhost.taint." in results[2].error.message
    results, events, _ = await trifecta(tmp_path, AllowAll(), Principal(user="anyone"))
    assert results[2].status is ResultStatus.APPROVAL_REQUIRED  # default approve, no approver here
    assert [(e.outcome, e.verdict.rule) for e in events] == [("approval_required", "config")]
    assert '"toolhost": {"taint": {"decision": "allow"}}' in results[2].error.message


@pytest.mark.anyio
async def test_the_local_admin_gets_the_config_rule_whatever_the_store_grants(tmp_path, access) -> None:
    me = local_admin_principal("local:me")
    access.users.add("alice")
    access.grants.add("alice", "trio__*", taint="allow")
    pol = LocalAdminPolicy(access, AllowAll())
    results, events, _ = await trifecta(tmp_path, pol, me, rule=TaintRule(decision=DENY))
    assert results[2].status is ResultStatus.PERMISSION_DENIED
    assert [(e.outcome, e.verdict.rule) for e in events] == [("denied", "config")]
    # alice through the same policy: her grant's allow
    results, events, _ = await trifecta(tmp_path, pol, access.principal_for_user("alice"),
                                        rule=TaintRule(decision=DENY))
    assert results[2].status is ResultStatus.OK
    assert [(e.outcome, e.verdict.rule) for e in events] == [("allowed", "allow:trio__*@user:alice")]


# -- the CLI ------------------------------------------------------------------------------------------
def test_cli_grants_add_and_roles_grant_take_taint(tmp_path) -> None:
    runner = CliRunner()
    data = str(tmp_path / "home")

    def cli(*args: str, code: int = 0):
        r = runner.invoke(app, [*args, "--data-dir", data], terminal_width=200)
        assert r.exit_code == code, r.output
        return r.output

    cli("users", "add", "alice")
    assert cli("grants", "add", "alice", "web__*", "--taint", "deny") == (
        "added grant #1 allow:web__*@user:alice (max risk destructive, approval default (destructive), taint deny)\n")
    cli("roles", "add", "ops")
    assert cli("roles", "grant", "ops", "server:mail", "--taint", "allow").endswith(", taint allow)\n")
    cli("grants", "add", "alice", "files__*")
    listing = cli("grants", "list")
    assert re.search(r"web__\*\s+│ destructive\s+│ default \(destructive\)\s+│ deny", listing), listing
    assert re.search(r"server:mail\s+│ .*│ allow", listing) and re.search(r"files__\*.*│ default \(config\)", listing)
    bad = cli("grants", "add", "alice", "x__*", "--taint", "sometimes", code=2)
    assert "'sometimes' is not one of 'allow', 'approve', 'deny'" in " ".join(bad.replace("│", "").split())
    refused = cli("grants", "add", "alice", "x__*", "--deny", "--taint", "allow", code=1)
    assert "set taint on an allow grant" in refused
    ac = AccessControl.open(tmp_path / "home")
    try:
        assert {g.pattern: g.taint for g in ac.grants.list()} == {"web__*": DENY, "server:mail": ALLOW,
                                                                  "files__*": None}
    finally:
        ac.close()


# -- the admin API of a running serve ------------------------------------------------------------------
def test_admin_api_adds_lists_and_refuses_taint_on_grants(tmp_path) -> None:
    from tests.admin.support import Serve, config, people

    data = tmp_path / "data"
    keys = people(data)
    with Serve(config(tmp_path), data) as serve, serve.api(keys["root"]) as api:
        assert api.post("/users", json={"name": "bob"}).status_code == 201
        made = api.post("/grants", json={"subject": "bob", "pattern": "orders__*", "taint": "deny"})
        assert made.status_code == 201
        assert (made.json()["taint"], made.json()["rule"]) == ("deny", "allow:orders__*@user:bob")
        plain = api.post("/grants", json={"subject": "bob", "pattern": "server:rug"}).json()
        assert plain["taint"] is None
        bad = api.post("/grants", json={"subject": "bob", "pattern": "x__*", "taint": "sometimes"})
        assert bad.status_code == 400 and "expected allow, approve or deny" in bad.text
        on_deny = api.post("/grants", json={"subject": "bob", "pattern": "x__*", "deny": True, "taint": "allow"})
        assert on_deny.status_code == 400 and "set taint on an allow grant" in on_deny.text
        listed = api.get("/grants", params={"subject": "bob", "kind": "user"}).json()["grants"]
        assert {g["pattern"]: g["taint"] for g in listed} == {"orders__*": "deny", "server:rug": None}


# -- approvals: a taint hold is lifted only by an approval that showed the taint reasons ---------------
@pytest.mark.anyio
async def test_an_approval_given_for_the_policy_alone_does_not_lift_a_taint_hold(access) -> None:
    access.users.add("alice")
    alice = access.principal_for_user("alice")
    tool = make_record("trio__send_message", "write")
    gate = ApprovalGate(access)
    args = {"text": "hi"}
    with anyio.fail_after(20):
        first = await gate.check(alice, tool, args)  # a policy approval: no taint in its text
        assert not first.approved
        access.approvals.approve(first.approval_id, by="bob")
        held = await gate.check(alice, tool, args, reason="taint: private data (c0) and untrusted content (c1)")
    assert not held.approved and held.approval_id != first.approval_id
    assert access.approvals.get(first.approval_id).status == "approved"  # still there for the policy-only call
    asked = access.approvals.get(held.approval_id)
    assert "taint: private data (c0) and untrusted content (c1)" in asked.rule
    access.approvals.approve(held.approval_id, by="bob")
    with anyio.fail_after(20):
        ran = await gate.check(alice, tool, args, reason="taint: private data (c0) and untrusted content (c1)")
    assert (ran.approved, ran.approval_id) == (True, held.approval_id)


def test_a_pending_policy_request_shows_the_taint_reasons_once_a_held_call_shares_it(access) -> None:
    access.users.add("alice")
    first = access.approvals.request("alice", "trio__send_message", {"text": "hi"}, rule="approve:trio__*")
    again = access.approvals.request("alice", "trio__send_message", {"text": "hi"},
                                     rule="approve:trio__*; taint: private (c0), untrusted (c1)",
                                     must_mention="taint: ")
    assert again.id == first.id and again.rule == "approve:trio__*; taint: private (c0), untrusted (c1)"
    assert access.approvals.get(first.id).rule == again.rule
    access.approvals.approve(first.id, by="bob")
    used = access.approvals.consume("alice", "trio__send_message", {"text": "hi"}, must_mention="taint: ")
    assert used is not None and used.id == first.id

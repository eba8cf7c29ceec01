"""Review fixes of the permissions layer: full arguments for approvers, hash-bound pin accepts,
removed users' approvals, concurrent elicitation, auth timing/audit growth, new_tools bypass and
a store failure inside the registry listener."""

from __future__ import annotations

import json
import logging
import re
import sqlite3

import anyio
import pytest
import typer
from typer.testing import CliRunner

import host.store.keys as keys_mod
from host.access import AccessControl
from host.store import PinHashMismatch
from registry.policy import Effect, Principal
from registry.store import ToolRegistry
from registry.tool import ToolAnnotations, ToolDefinition, build_record
from servers.cli.admin_commands import register
from servers.gateway.approval_elicit import approval_message
from servers.http.api_keys import ApiKeyVerifier
from servers.shared.local_principal import local_principal_name

SQL = "SELECT * FROM customers WHERE id = 1" + " " * 200 + "; DROP TABLE customers"
QUERY = build_record(
    server="db",
    qualified_name="db__query",
    definition=ToolDefinition(name="query", annotations=ToolAnnotations(destructive_hint=True)),
)


@pytest.fixture
def cli(tmp_path):
    app = typer.Typer()
    register(app)

    @app.command("version")
    def _version() -> None:
        typer.echo("x")

    runner = CliRunner()
    data = tmp_path / "cli-data"

    def run(*args: str, ok: bool = True):
        result = runner.invoke(app, [*args, "--data-dir", str(data)])
        assert result.exit_code == (0 if ok else 1), result.output
        return result

    run.data = data
    return run


# 1. approvers see the exact arguments; the stored log copy is redacted -------------------------------------------
def test_approval_stores_full_arguments_with_secrets_masked(access: AccessControl) -> None:
    req = access.approvals.request("bob", "db__query", {"sql": SQL, "password": "hunter2", "n": [1, {"x": "y" * 500}]})
    stored = json.loads(access.approvals.get(req.id).arguments_redacted)
    assert stored == {"sql": SQL, "password": "[REDACTED]", "n": [1, {"x": "y" * 500}]}


def test_cli_show_prints_full_arguments_and_list_marks_cut_previews(cli) -> None:
    access = AccessControl.open(cli.data)
    long_req = access.approvals.request("bob", "db__query", {"sql": SQL, "api_key": "sk-secretsecretsecret1234"})
    short_req = access.approvals.request("bob", "db__query", {"sql": "SELECT 1"})
    access.close()
    listing = cli("approvals", "list").output
    flat = re.sub(r"[\s│]+", "", listing)
    assert f"…(seeapprovalsshow{long_req.id})" in flat
    assert flat.count("(seeapprovalsshow") == 1  # the short one is complete, not marked
    assert '{"sql":"SELECT1"}' in flat and short_req.id in flat
    shown = cli("approvals", "show", long_req.id).output
    assert SQL in shown and "; DROP TABLE customers" in shown
    assert "sk-secretsecretsecret1234" in shown and "[REDACTED]" not in shown  # approvers see exact values
    assert "exact and complete: what the tool receives" in shown
    assert f"approval: {long_req.id}" in shown and "status: pending" in shown
    assert "unknown approval" in cli("approvals", "show", "ap_nope", ok=False).output


def test_cli_show_escapes_invisible_characters(cli) -> None:
    access = AccessControl.open(cli.data)
    req = access.approvals.request("bob", "db__query", {"sql": "SELECT 1\u202e; DROP\u200b TABLE t"})
    access.close()
    shown = cli("approvals", "show", req.id).output
    assert "\u202e" not in shown and "\u200b" not in shown
    assert "SELECT 1\\u202e; DROP\\u200b TABLE t" in shown


def test_elicitation_prompt_is_complete_or_says_it_was_shortened(access: AccessControl) -> None:
    req = access.approvals.request("eve", "db__query", {"sql": SQL})
    msg = approval_message(req, QUERY)
    assert "; DROP TABLE customers" in msg and "shortened" not in msg
    big = access.approvals.request("eve", "db__query", {"sql": "x" * 5000 + "; DROP TABLE customers"})
    msg = approval_message(big, QUERY)
    assert "DROP TABLE" not in msg
    assert f"shortened for this prompt (2000 of {len(big.arguments_redacted)} characters shown)" in msg
    assert f"toolhost approvals show {big.id}" in msg


# 2. pins accept binds to the reviewed definition ----------------------------------------------
def test_accept_only_the_reviewed_hash(access: AccessControl, record) -> None:
    v1, v2, v3 = (record("rug__q", description=d) for d in ("one", "two", "three"))
    access.observe("rug", [v1])
    access.observe("rug", [v2])
    review = access.pins.review("rug__q")
    assert (review.status, review.pinned_hash) == ("changed", v1.definition_hash)
    assert review.pending_hash == v2.definition_hash
    access.observe("rug", [v3])  # the server flips again after the admin read the diff
    with pytest.raises(PinHashMismatch, match="pins diff rug__q` again") as info:
        access.pins.accept("rug__q", review.pending_hash)
    assert (info.value.reviewed, info.value.pending) == (v2.definition_hash, v3.definition_hash)
    [pin] = access.pins.list()
    assert (pin.status, pin.definition_hash, pin.pending_hash) == ("changed", v1.definition_hash, v3.definition_hash)
    pin = access.pins.accept("rug__q", access.pins.review("rug__q").pending_hash)
    assert (pin.status, pin.definition_hash, pin.pending_hash) == ("trusted", v3.definition_hash, None)
    access.users.add("a")
    access.grants.add("a", "*")
    assert access.evaluate(Principal("a"), v3).effect is Effect.ALLOW
    assert access.evaluate(Principal("a"), v2).rule == "pin:changed"


def test_cli_diff_prints_hash_and_accept_requires_it(cli, record) -> None:
    access = AccessControl.open(cli.data)
    v1, v2, v3 = (record("rug__q", description=d) for d in ("one", "two", "three"))
    access.observe("rug", [v1, record("rug__w")])
    access.observe("rug", [v2, record("rug__w")])
    diff = cli("pins", "diff", "rug__q").output
    assert f"pending definition hash: {v2.definition_hash}" in diff
    assert f"toolhost pins accept rug__q --hash {v2.definition_hash}" in diff
    assert "pins diff rug__q" in cli("pins", "accept", "rug__q", ok=False).output  # no --hash
    access.observe("rug", [v3, record("rug__w")])
    out = cli("pins", "accept", "rug__q", "--hash", v2.definition_hash, ok=False).output
    assert "not the reviewed" in out and "pins diff rug__q` again" in out
    assert access.pins.list(status="changed")[0].pending_hash == v3.definition_hash
    out = cli("pins", "accept", "rug__q", "--hash", v3.definition_hash).output
    assert f"accepted 1 definition(s):\n  rug__q {v3.definition_hash}" in out
    # bulk: --yes required, and what was accepted is printed and audited
    access.observe("rug", [v1, record("rug__w", description="new")])
    assert "--yes" in cli("pins", "accept", "--server", "rug", ok=False).output
    assert len(access.pins.list(status="changed")) == 2
    out = cli("pins", "accept", "--server", "rug", "--yes").output
    w = record("rug__w", description="new")
    assert f"accepted 2 definition(s):\n  rug__q {v1.definition_hash}\n  rug__w {w.definition_hash}" in out
    details = [(e.user, e.tool, e.detail) for e in access.audit_log.query(action="pin", status="accepted")]
    local = local_principal_name()  # the local admin who ran the CLI
    assert details == [
        (local, "rug__w", f"definition {w.definition_hash}"),
        (local, "rug__q", f"definition {v1.definition_hash}"),
        (local, "rug__q", f"definition {v3.definition_hash}"),
    ]
    access.close()


# 3. removing a user removes its approvals -----------------------------------------------------
def test_removed_user_approvals_do_not_pass_to_a_new_user_of_that_name(access: AccessControl) -> None:
    access.users.add("bob")
    approved = access.approvals.request("bob", "db__query", {"sql": "x"})
    access.approvals.approve(approved.id)
    denied = access.approvals.request("bob", "db__query", {"sql": "y"})
    access.approvals.deny(denied.id)
    access.approvals.request("bob", "db__query", {"sql": "z"})
    access.approvals.request("other", "db__query", {"sql": "x"})
    access.users.remove("bob")
    access.users.add("bob")
    assert access.approvals.consume("bob", "db__query", {"sql": "x"}) is None
    assert access.approvals.request("bob", "db__query", {"sql": "y"}).status == "pending"  # not the old denial
    assert [a.user for a in access.approvals.list(status="all") if a.user == "other"] == ["other"]


# 4. identical concurrent calls share one pending approval -------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answers", "expected", "final"),
    [
        ((True, True), [(True, False, "approved by the user"), (False, False, "already used by an identical")], "used"),
        ((True, False), [(True, False, "approved by the user"), (False, True, "the user declined")], "used"),
        (
            (False, True),
            [(False, True, "the user declined"), (False, True, "was denied by eve (self-approval)")],
            "denied",
        ),
    ],
)
async def test_concurrent_identical_calls_during_elicitation(access: AccessControl, answers, expected, final) -> None:
    """Both calls are asked about the one shared pending request; the first answer is applied, then
    the second: it must report the approval's real state, never raise ApprovalNotPending."""
    access.users.add("eve")
    access.grants.add("eve", "db__*")
    access.grants.set_self_approval("eve", "db__*")
    both_asked, first_done = anyio.Event(), anyio.Event()
    asked: list[str] = []
    outcomes: dict[int, object] = {}

    async def elicit(approval, tool):
        idx = len(asked)
        asked.append(approval.id)
        if idx == 1:
            both_asked.set()
        await both_asked.wait()
        if idx == 1:
            await first_done.wait()
        return answers[idx]

    gate = access.approval_hook(elicit=elicit)

    async def call() -> None:
        out = await gate.check(Principal("eve"), QUERY, {"sql": "DELETE FROM t"})
        outcomes[1 if first_done.is_set() else 0] = out  # in the order the answers were applied
        first_done.set()

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            tg.start_soon(call)
    assert len(set(asked)) == 1  # one shared pending request
    got = [(outcomes[i].approved, outcomes[i].rejected, outcomes[i].reason) for i in (0, 1)]
    assert [(a, r) for a, r, _ in got] == [(a, r) for a, r, _ in expected]
    assert all(text in reason for (_, _, reason), (_, _, text) in zip(got, expected, strict=True))
    assert [a.status for a in access.approvals.list(status="all")] == [final]


@pytest.mark.anyio
async def test_approval_of_a_removed_user_during_elicitation(access: AccessControl) -> None:
    access.users.add("eve")
    access.grants.add("eve", "db__*")
    access.grants.set_self_approval("eve", "db__*")

    async def remove_then_yes(approval, tool):
        await anyio.to_thread.run_sync(access.users.remove, "eve")
        return True

    with anyio.fail_after(20):
        out = await access.approval_hook(elicit=remove_then_yes).check(Principal("eve"), QUERY, {"sql": "x"})
    assert (out.approved, out.rejected) == (False, False) and "no longer exists" in out.reason


# 5. no timing oracle for key ids; failed auth audit is aggregated -----------------------------
def test_unknown_and_revoked_key_ids_cost_one_scrypt(access: AccessControl, monkeypatch) -> None:
    access.users.add("alice")
    _info, token = access.keys.create("alice")
    _info2, revoked = access.keys.create("alice")
    access.keys.revoke("alice", revoked.split("_")[1])
    calls: list[str] = []
    real = keys_mod.hash_secret

    def counting(secret, salt, kdf="scrypt:16384:8:1"):
        calls.append(kdf)
        return real(secret, salt, kdf)

    monkeypatch.setattr(keys_mod, "hash_secret", counting)
    for bad in ("th_000000000000_" + "x" * 43, revoked, token[:-2] + "zz"):
        calls.clear()
        assert access.keys.verify(bad) is None
        assert calls == ["scrypt:16384:8:1"], bad[:16]
    calls.clear()
    assert access.keys.verify("not-a-key") is None and calls == []  # malformed: nothing to hide


def test_failed_auth_audit_is_one_row_per_key_per_minute(access: AccessControl) -> None:
    access.users.add("alice")
    _info, token = access.keys.create("alice")
    key_id = token.split("_")[1]
    wrong = token[:-2] + "zz"
    log = access.audit_log
    first = log.record_auth_failure(None, reason="unknown", now=1000.0)
    for t in (1001.0, 1030.0, 1059.0):
        assert log.record_auth_failure(None, reason="unknown", now=t) == first
    later = log.record_auth_failure(None, reason="unknown", now=1061.0)
    assert later != first
    rows = {e.id: e for e in log.query(action="auth")}
    assert rows[first].detail.startswith("4 failed attempts since 1970-01-01T001640Z: unknown")
    assert rows[later].detail.startswith("1 failed attempt since")
    for bad in ("th_" + "a" * 12 + "_" + "x" * 43, "th_" + "b" * 12 + "_" + "x" * 43, "junk", wrong, wrong, None):
        access.audit_auth_failure(bad)
    recent = [e for e in log.query(action="auth") if e.id not in (first, later)]
    assert sorted((e.key_id or "-", e.detail.split(" since ")[0]) for e in recent) == [
        ("-", "4 failed attempts"),  # random key ids, junk and none share the unknown bucket
        (key_id, "2 failed attempts"),
    ]
    assert all(token not in (e.detail or "") and wrong not in (e.detail or "") for e in recent)


@pytest.mark.anyio
async def test_verifier_flood_writes_one_audit_row(access: AccessControl) -> None:
    verifier = ApiKeyVerifier(access)
    with anyio.fail_after(30):
        for i in range(5):
            assert await verifier.verify_token(f"th_{i:012x}_" + "x" * 43) is None
    [row] = access.audit_log.query(action="auth")
    assert (row.key_id, row.status, row.decision) == (None, "invalid_key", "deny")
    assert row.detail.startswith("5 failed attempts")


# 6. new_tools="held" cannot be bypassed via a changed pin -------------------------------------
def test_new_tool_of_a_server_whose_only_pin_changed_is_held(access: AccessControl, record) -> None:
    access.pins.new_tools = "held"
    access.observe("srv", [record("srv__a", description="v1")])
    assert access.observe("srv", [record("srv__a", description="v2")]).changed == ["srv__a"]
    new = record("srv__b")
    report = access.observe("srv", [record("srv__a", description="v2"), new])
    assert report.held == ["srv__b"] and report.pinned == []
    access.users.add("a")
    access.grants.add("a", "*")
    assert access.evaluate(Principal("a"), new).rule == "pin:held"


# 7. the registry listener never raises on a locked database -----------------------------------
def test_watch_listener_survives_a_locked_database(tmp_path, record, caplog, monkeypatch) -> None:
    import host.store.engine as engine_mod

    monkeypatch.setattr(engine_mod, "BUSY_TIMEOUT_SECONDS", 0.05)
    access = AccessControl.open(tmp_path / "d")
    access.users.add("a")
    access.grants.add("a", "*")
    reg = ToolRegistry()
    v1, v2 = record("srv__a", description="v1"), record("srv__a", description="v2")
    reg.replace_server("srv", [v1])
    unwatch = access.watch(reg)
    assert [p.status for p in access.pins.list()] == ["trusted"]
    locker = sqlite3.connect(tmp_path / "d" / "toolhost.db", isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with caplog.at_level(logging.WARNING, logger="host.access"):
            reg.replace_server("srv", [v2])  # must not raise
            reg.replace_server("other", [record("other__x")])  # still locked: no second warning
        assert len([r for r in caplog.records if "retrying on the next tool list change" in r.getMessage()]) == 1
        # not recorded yet, but the changed definition is refused at once (served hash != pinned hash)
        assert access.evaluate(Principal("a"), v2).rule == "pin:changed"
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    reg.replace_server("third", [record("third__y")])  # next change: the failed servers are observed again
    assert {(p.tool, p.status) for p in access.pins.list()} == {
        ("srv__a", "changed"),
        ("other__x", "trusted"),
        ("third__y", "trusted"),
    }
    unwatch()
    access.close()

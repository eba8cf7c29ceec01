"""The admin CLI through typer's CliRunner (a throwaway app with register())."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from host.access import AccessControl
from registry.policy import Principal
from servers.cli.admin_commands import register


@pytest.fixture
def cli(tmp_path):
    app = typer.Typer()
    register(app)

    @app.command("version")  # a second command so typer keeps sub-command dispatch
    def _version() -> None:
        typer.echo("x")

    runner = CliRunner()
    data = tmp_path / "cli-data"

    def run(*args: str, ok: bool = True, code: int = 1):
        result = runner.invoke(app, [*args, "--data-dir", str(data)])
        if ok:
            assert result.exit_code == 0, result.output
        else:
            assert result.exit_code == code, result.output
        return result

    run.data = data
    return run


def test_users_grants_keys_roundtrip(cli) -> None:
    assert "added user alice" in cli("users", "add", "alice").output
    assert "already exists" in cli("users", "add", "alice", ok=False).output
    assert "unknown user 'bob'" in cli("grants", "add", "bob", "orders__*", ok=False).output
    assert "invalid pattern" in cli("grants", "add", "alice", "orders__[", ok=False).output
    assert (
        "Invalid value for '--max-risk': Value error, 'huge' is not one of 'read', 'write', 'destructive'."
        in " ".join(
            cli("grants", "add", "alice", "orders__*", "--max-risk", "huge", ok=False, code=2)
            .output.replace("│", "")
            .split()
        )
    )
    assert cli("grants", "add", "alice", "orders__*", "--max-risk", "write").output == (
        "added grant #1 allow:orders__*@user:alice (max risk write, approval default (destructive))\n")
    assert "already exists" in cli("grants", "add", "alice", "orders__*", ok=False).output
    assert cli("grants", "add", "alice", "orders__cancel_order", "--deny").output == (
        "added grant #2 deny:orders__cancel_order@user:alice (deny wins over every allow, at every risk)\n")
    cli("grants", "add", "alice", "server:notes", "--approval")
    listing = cli("grants", "list", "alice").output
    assert re.search(r"orders__\*\s+│ write\s+│ default", listing) and "always" in listing and "deny" in listing
    # a deny grant refuses at every risk: no max risk or approval is listed for it
    assert re.search(r"│ deny\s+│ orders__cancel_order\s+│ -\s+│ -\s", listing), listing
    created = cli("keys", "create", "alice", "--label", "laptop").output
    token = re.search(r"th_[0-9a-f]{12}_\S+", created).group(0)
    keys = cli("keys", "list", "alice").output
    assert token not in keys and "laptop" in keys and "active" in keys
    access = AccessControl.open(cli.data)
    assert access.authenticate(token).user == "alice"
    key_id = token.split("_")[1]
    assert "give a KEY_ID" in cli("keys", "revoke", "alice", ok=False).output
    assert f"revoked 1 key(s) of alice: {key_id}" in cli("keys", "revoke", "alice", key_id).output
    assert access.authenticate(token) is None
    second = re.search(r"th_[0-9a-f]{12}_\S+", cli("keys", "create", "alice").output).group(0)
    lone = second.split("_")[1]  # the key id alone: its user is looked up
    assert cli("keys", "revoke", lone).output == f"revoked 1 key(s) of alice: {lone}\n"
    assert access.authenticate(second) is None
    assert "error: no API key has the id 'alice': give a KEY_ID" in cli("keys", "revoke", "alice", ok=False).output
    assert "unknown user 'zed'" in cli("keys", "create", "zed", ok=False).output
    users = cli("users", "list").output
    assert re.search(r"alice\s+│ enabled\s+│ -\s+│ 3\s+│ 0", users)
    # disabled without a running serve: the CLI works on the database, as the local admin
    done = cli("users", "disable", "alice", "--reason", "audit pending").output
    assert done == "disabled user alice: their keys are refused until `toolhost users enable alice`\n"
    state = r"disabled by local:\S+ since \S+ \S+: audit pending"
    assert re.search(rf"alice\s+│ {state}\s+│ -\s+│ 3", cli("users", "list").output)
    refused = cli("keys", "create", "alice", ok=False).output
    assert refused.startswith("error: no new API key: user alice is disabled by local:")
    assert refused.endswith(" (audit pending); an admin runs `toolhost users enable alice`\n")
    assert cli("users", "enable", "alice").output == "enabled user alice\n"
    assert re.search(r"alice\s+│ enabled\s+│", cli("users", "list").output)
    assert (
        "removed grant orders__cancel_order"
        in cli("grants", "remove", "alice", "orders__cancel_order", "--deny").output
    )
    assert "has no grant" in cli("grants", "remove", "alice", "nope__*", ok=False).output
    cli("users", "remove", "alice")
    assert "unknown user 'alice'" in cli("users", "remove", "alice", ok=False).output
    access.close()


def test_roles(cli) -> None:
    cli("users", "add", "bob")
    cli("roles", "add", "ops", "--description", "operators")
    cli("roles", "grant", "ops", "server:git", "--max-risk", "read")
    assert "already exists" in cli("roles", "add", "ops", ok=False).output
    cli("roles", "assign", "ops", "bob")
    assert re.search(r"ops\s+│ bob\s+│ 1", cli("roles", "list").output)
    access = AccessControl.open(cli.data)
    assert access.principal_for_user("bob") == Principal("bob", ("ops",))
    cli("roles", "unassign", "ops", "bob")
    cli("roles", "revoke", "ops", "server:git")
    cli("roles", "remove", "ops")
    assert "unknown role 'ops'" in cli("roles", "assign", "ops", "bob", ok=False).output
    access.close()


def test_approvals_pins_audit(cli, record) -> None:
    access = AccessControl.open(cli.data)
    req = access.approvals.request("alice", "notes__delete_note", {"title": "x", "password": "hunter2"})
    listing = cli("approvals", "list").output
    assert req.id in listing and "hunter2" in listing and "pending" in listing  # approvers see exact values
    assert "approved" in cli("approvals", "approve", req.id).output
    assert "not pending" in cli("approvals", "deny", req.id, ok=False).output
    assert "unknown approval" in cli("approvals", "approve", "ap_nope", ok=False).output
    v1, v2 = record("rug__q", "read", description="one"), record("rug__q", "read", description="two")
    access.observe("rug", [v1])
    access.observe("rug", [v2])
    assert "changed" in cli("pins", "list").output
    diff = cli("pins", "diff", "rug__q").output
    assert '-  "description": "one"' in diff and '+  "description": "two"' in diff
    assert "exactly one of" in cli("pins", "accept", ok=False).output
    h = v2.definition_hash
    assert f"accepted 1 definition(s):\n  rug__q {h}" in cli("pins", "accept", "rug__q", "--hash", h).output
    assert "nothing to accept" in cli("pins", "accept", "rug__q", "--hash", h, ok=False).output
    access.audit(
        action="call",
        principal=Principal("alice", key_id="k1"),
        tool="notes__read_note",
        decision="allow",
        status="ok",
        arguments={"title": "t"},
    )
    access.audit(action="call", principal=Principal("bob"), tool="orders__x", decision="deny", status="unknown_tool")
    out = cli("audit", "--user", "alice").output
    assert "notes__read_note" in out and "orders__x" not in out
    out = cli("audit", "--status", "unknown_tool").output
    assert "orders__x" in out and "notes__read_note" not in out
    out = cli("audit", "--action", "pin").output
    assert "rug__q" in out and "accepted" in out
    access.close()

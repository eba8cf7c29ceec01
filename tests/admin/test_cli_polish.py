"""CLI polish: --version, -h, listed choices, flags without placeholders, --json on admin commands,
audit --since/--follow."""

from __future__ import annotations

import getpass
import json
import signal
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from host.access import AccessControl
from servers.cli.app import app

TOOLHOST = str(Path(sys.executable).parent / "toolhost")
runner = CliRunner()


def test_version_and_short_help() -> None:
    assert runner.invoke(app, ["--version"]).output == "toolhost 0.1.0\n"
    out = runner.invoke(app, ["serve", "-h"], env={"COLUMNS": "200"}).output
    assert "<search|all>" in out and "<auto|on|off>" in out and "<text|json>" in out
    assert "<bool>" not in out and "--stdio" in out


def test_admin_commands_print_json_and_approve_through_the_shared_service(tmp_path) -> None:
    a = AccessControl.open(tmp_path)
    try:
        a.users.add("alice")
        req = a.approvals.request("alice", "orders__cancel_order", {"order_id": "A1", "token": "s3cret"})
    finally:
        a.close()
    base = ["--data-dir", str(tmp_path)]
    users = json.loads(runner.invoke(app, ["users", "list", "--json", *base]).output)
    assert [(u["name"], u["roles"], u["grants"]) for u in users] == [("alice", [], 0)]
    shown = json.loads(runner.invoke(app, ["approvals", "show", req.id, "--json", *base]).output)
    assert shown["arguments"] == {"order_id": "A1", "token": "s3cret"}  # approvers see the exact call
    approved = json.loads(runner.invoke(app, ["approvals", "approve", req.id, "--json", *base]).output)
    local = f"local:{getpass.getuser()}"  # the local admin's CLI decides as local:<os user>
    assert (approved["status"], approved["decided_by"]) == ("approved", local)
    rows = json.loads(runner.invoke(app, ["audit", "--since", "10m", "--json", *base]).output)
    assert [(r["action"], r["user"], r["approver"], r["approval_id"], r["status"], r["detail"]) for r in rows] == [
        ("approval", "alice", local, req.id, "approved", f"cli: approved by {local}")]
    assert json.loads(runner.invoke(app, ["audit", "--since", "2030-01-01T00:00:00Z", "--json", *base]).output) == []
    bad = runner.invoke(app, ["audit", "--since", "yesterday", *base], env={"COLUMNS": "300"})
    assert (
        bad.exit_code == 2
        and "Invalid value for '--since': 'yesterday': use a duration like 30s, 15m, 2h, 7d" in bad.output
    )


def test_audit_follow_prints_new_entries(tmp_path) -> None:
    a = AccessControl.open(tmp_path)
    a.users.add("bob")
    proc = subprocess.Popen(
        [TOOLHOST, "audit", "--follow", "--json", "--data-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        req = a.approvals.request("bob", "orders__cancel_order", {"order_id": "A2"})
        a.approvals.deny(req.id, by="root")
        a.audit(action="approval", tool=req.tool, decision="deny", status="denied", detail=req.id)
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded by the test timeout; --follow prints within ~1 s
        assert (json.loads(line)["status"], json.loads(line)["detail"]) == ("denied", req.id)
    finally:
        a.close()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_empty_admin_listings_print_one_sentence_instead_of_a_table(tmp_path) -> None:
    base = ["--data-dir", str(tmp_path)]
    env = {"COLUMNS": "200", "TOOLHOST_NO_SERVE": "1"}
    sentences = {
        ("users", "list"): "No users yet: add one with `toolhost users add NAME`.",
        ("roles", "list"): "No roles yet: add one with `toolhost roles add NAME`.",
        ("keys", "list"): "No API keys: create one with `toolhost keys create USER`.",
        ("grants", "list"): "No grants: add one with `toolhost grants add USER 'PATTERN'`.",
        ("approvals", "list"): "No pending approvals.",
        ("approvals", "list", "--status", "denied", "--user", "bob"): "No denied approvals for bob.",
        ("approvals", "list", "--status", "all"): "No approvals.",
        ("pins", "list", "--server", "orders"): "No pins of server orders: tools are pinned when `toolhost serve` "
                                                "first lists them.",
    }
    for cmd, sentence in sentences.items():
        out = runner.invoke(app, [*cmd, *base], env=env)
        assert out.exit_code == 0 and out.output == sentence + "\n", (cmd, out.output)
    assert runner.invoke(app, ["approvals", "list", "--json", *base], env=env).output.strip() == "[]"
    audit = runner.invoke(app, ["audit", "--tool", "x__y", *base], env=env)
    assert audit.output == "No audit rows match these filters.\n"
    assert runner.invoke(app, ["users", "add", "alice", *base], env=env).exit_code == 0
    listed = runner.invoke(app, ["users", "list", *base], env=env).output
    assert "alice" in listed and "No users yet" not in listed
    keys = runner.invoke(app, ["keys", "list", "alice", *base], env=env).output
    assert keys == "No API keys for alice: create one with `toolhost keys create USER`.\n"

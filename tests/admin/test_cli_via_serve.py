"""The CLI as one thin client of a running ``toolhost serve``: with a serve on the
same data folder, ``servers``, ``tools``, ``call``, ``reconnect`` and the admin commands go through its
admin API with the loopback-only local admin token; once it stops they open the database / connect
the servers themselves."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from servers.cli.serve_client import RunningServe, running_serve
from servers.shared.endpoint import endpoint_record, store_fingerprint
from servers.shared.local_principal import local_principal_name
from tests.admin.support import TOOLHOST, Serve, config, people

# each test runs up to ~20 CLI processes, each importing the whole stack (1-10 s apiece on a loaded 2-core box)
pytestmark = pytest.mark.timeout(360)


def cli(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLHOST, *args, "--data-dir", str(data_dir)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "200", **(env or {})})


def test_cli_commands_go_through_the_running_serve_and_fall_back_when_it_stops(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    cfg = config(tmp_path)
    people(data)
    local = local_principal_name()
    with Serve(cfg, data) as serve:
        record = json.loads((data / "serve.json").read_text())
        assert (record["url"], record["pid"], record["store"], record["config"]) == (
            serve.url, serve.proc.pid, store_fingerprint(data, None), str(cfg.resolve()))
        with serve.api() as api:
            served = {s["name"]: s for s in api.get("/servers").json()["servers"]}

        # servers: the serve's own view (its connect times, not a fresh connection's)
        got = json.loads(cli(data, "servers", "--json").stdout)
        assert [(s["name"], s["state"], s["tools"], s["connect_seconds"]) for s in got] == [
            (n, "connected", c, served[n]["connect_seconds"]) for n, c in (("orders", 3), ("rug", 2))]

        # tools: as a user (their grants) and as the local admin (every tool)
        tools = json.loads(cli(data, "tools", "--json", "--user", "alice").stdout)
        assert [t["name"] for t in tools] == ["orders__cancel_order", "orders__get_order", "orders__list_orders",
                                              "rug__daily_quote", "rug__word_count"]
        assert tools[1]["input_schema"]["required"] == ["order_id"] and tools[1]["risk"] == "read"
        assert cli(data, "tools", "--user", "nobody").returncode == 2

        # call as the local admin: full access; audited with the local admin's key id (only the serve does that)
        done = cli(data, "call", "orders__get_order", '{"order_id": "A1001"}')
        assert done.returncode == 0 and json.loads(done.stdout)["total_cents"] == 8900
        [row] = json.loads(cli(data, "audit", "--action", "call", "--json").stdout)
        assert (row["user"], row["key_id"], row["tool"], row["status"]) == (
            local, "local-admin", "orders__get_order", "ok")

        # a call that needs approval, approved from the CLI through the serve (its event line shows it)
        asked = cli(data, "call", "orders__cancel_order", '{"order_id": "A1002"}', "--user", "alice", "--json")
        result = json.loads(asked.stdout)
        assert (asked.returncode, result["status"], result["error"]["code"]) == (
            1, "approval_required", "approval_required")
        approval_id = result["error"]["approval_id"]
        issuer = f"{local} as alice"  # the local admin's call as alice is recorded as theirs
        refused = cli(data, "approvals", "approve", approval_id)  # who issued a call may not approve it
        assert refused.returncode == 1 and "they issued this call" in refused.stderr
        mark = len(serve.lines)
        approved = cli(data, "approvals", "approve", approval_id, "--as", "root")
        assert approved.returncode == 0 and approved.stdout.startswith(f"approved {approval_id}: {issuer} may run")
        # the local admin decided as root: both are named, in the serve's log and the audit
        serve.wait_for(rf"{approval_id}: {re.escape(issuer)} -> orders__cancel_order approved by "
                       rf"{re.escape(local)} as root", 30, mark)
        ran = cli(data, "call", "orders__cancel_order", '{"order_id": "A1002"}', "--user", "alice", "--json")
        assert (ran.returncode, json.loads(ran.stdout)["status"]) == (0, "ok")
        rows = json.loads(cli(data, "audit", "--tool", "orders__cancel_order", "--json").stdout)
        assert sorted((r["action"], r["status"], r["approval_id"], r["approver"]) for r in rows) == [
            ("approval", "approved", approval_id, f"{local} as root"),
            ("call", "approval_required", approval_id, None),
            ("call", "ok", approval_id, f"{local} as root"),
        ]

        # admin commands: values, and errors worded as the store words them
        assert cli(data, "users", "add", "bob").stdout == (
            "added user bob; next: toolhost grants add bob PATTERN, toolhost keys create bob\n")
        dup = cli(data, "users", "add", "bob")
        assert (dup.returncode, dup.stderr) == (1, "error: user 'bob' already exists\n")
        assert cli(data, "grants", "add", "bob", "orders__get_order", "--max-risk", "read").stdout == (
            "added grant #3 allow:orders__get_order@user:bob (max risk read, approval default (destructive))\n")
        [grant] = json.loads(cli(data, "grants", "list", "bob", "--json").stdout)
        assert (grant["pattern"], grant["max_risk"], grant["approval"]) == ("orders__get_order", "read", None)
        key = json.loads(cli(data, "keys", "create", "bob", "--json").stdout)
        assert key["user"] == "bob" and key["token"].startswith("th_")
        with serve.api() as api:
            users = {u["name"]: u for u in api.get("/users").json()["users"]}
        assert (users["bob"]["grants"], users["bob"]["active_keys"]) == (1, 1)
        assert json.loads(cli(data, "usage", "stats", "--json").stdout)["pairs"] >= 0

        # reconnect one server through the admin API
        again = cli(data, "reconnect", "orders")
        assert (again.returncode, again.stdout) == (0, "reconnected orders: connected (3 tools)\n")
        unknown = cli(data, "reconnect", "nope")
        assert (unknown.returncode, unknown.stderr) == (2, "error: no server named 'nope' in the configuration\n")

    # the serve stopped: its files are gone and every command works on its own
    assert not (data / "serve.json").exists() and not (data / "admin.token").exists()
    users = json.loads(cli(data, "users", "list", "--json").stdout)
    assert [u["name"] for u in users] == ["alice", "bob", "root"]
    alone = cli(data, "servers", "--json", "--config", str(cfg))
    assert [(s["name"], s["state"]) for s in json.loads(alone.stdout)] == [
        ("orders", "connected"),
        ("rug", "connected"),
    ]
    gone = cli(data, "reconnect", "orders")
    assert gone.returncode == 2 and "no toolhost serve runs on the data folder" in gone.stderr


def test_stale_or_unreachable_serve_records_fall_back_to_the_database(tmp_path) -> None:
    people(tmp_path)
    (tmp_path / "admin.token").write_text("tha_stale")
    dead = subprocess.run(["true"])  # a pid that no longer runs
    rec = endpoint_record("http://127.0.0.1:9", tmp_path, None, None) | {"pid": 2**22 + 17 + dead.returncode}
    (tmp_path / "serve.json").write_text(json.dumps(rec))
    assert running_serve(tmp_path) is None
    # a live pid but nobody listening: the commands find out on the first request and do the work themselves
    (tmp_path / "serve.json").write_text(json.dumps(rec | {"pid": os.getpid()}))
    assert running_serve(tmp_path) is not None
    out = cli(tmp_path, "users", "list", "--json")
    assert out.returncode == 0 and [u["name"] for u in json.loads(out.stdout)] == ["alice", "root"]
    # another store (--db-url) or another config file is another serve's business
    assert running_serve(tmp_path, db_url="sqlite:////elsewhere.db") is None
    # ...except for what only the serve holds (reconnect, taint reset): a serve on PostgreSQL is found
    assert running_serve(tmp_path, db_url="sqlite:////elsewhere.db", any_store=True) is not None
    (tmp_path / "serve.json").write_text(json.dumps(rec | {"pid": os.getpid(), "store": "postgresql://h/toolhost"}))
    assert running_serve(tmp_path) is None and running_serve(tmp_path, any_store=True) is not None
    (tmp_path / "serve.json").write_text(json.dumps(rec | {"pid": os.getpid()}))
    assert running_serve(tmp_path, config=tmp_path / "other.json") is None
    assert running_serve(tmp_path, config=None) is not None


def test_the_local_admin_token_never_leaves_loopback(tmp_path) -> None:
    (tmp_path / "admin.token").write_text("tha_secret")
    rec = endpoint_record("http://10.1.2.3:8080", tmp_path, None, None)
    (tmp_path / "serve.json").write_text(json.dumps(rec))
    assert running_serve(tmp_path) is None
    with pytest.raises(ValueError, match="only sent to loopback, not to http://10.1.2.3:8080"):
        RunningServe("http://10.1.2.3:8080", "tha_secret")
    assert RunningServe("http://[::1]:8080", "t").url == "http://[::1]:8080"


def test_the_cli_spells_the_approver_role_as_the_store_does() -> None:
    from host.access import APPROVER_ROLE
    from servers.cli.review_commands import APPROVER_ROLE as cli_spelling

    assert cli_spelling == APPROVER_ROLE == "approver"


def test_a_serve_without_permissions_still_answers_the_cli_for_servers_tools_search_and_calls(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    cfg = config(tmp_path)
    with Serve(cfg, data, "--auth", "off") as serve:
        with serve.api() as api:
            served = {s["name"]: s for s in api.get("/servers").json()["servers"]}
            refused = api.get("/users")
            tools = api.get("/tools").json()["tools"]
            found = api.get("/search", params={"q": "cancel my order"}).json()
        assert (refused.status_code, refused.json()["error"]["code"]) == (503, "no_store")
        assert refused.json()["error"]["message"].startswith("the permission store is off (--auth off)")
        assert [t["name"] for t in tools][:3] == ["orders__cancel_order", "orders__get_order", "orders__list_orders"]
        assert {t["pin"] for t in tools} == {"unpinned"}
        assert found["hits"][0]["name"] == "orders__cancel_order"
        # the CLI gets the serve's own view (its connect times), not a fresh connection's
        got = json.loads(cli(data, "servers", "--json").stdout)
        assert [(s["name"], s["connect_seconds"]) for s in got] == [
            (n, served[n]["connect_seconds"]) for n in ("orders", "rug")
        ]
        done = cli(data, "call", "orders__get_order", '{"order_id": "A1001"}')
        assert done.returncode == 0 and json.loads(done.stdout)["total_cents"] == 8900
        # store commands fall back to the database itself
        assert cli(data, "users", "add", "carol").returncode == 0
        assert [u["name"] for u in json.loads(cli(data, "users", "list", "--json").stdout)] == ["carol"]


def test_grants_add_warns_of_a_pattern_that_matches_no_tool_of_the_running_serve(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    people(data)
    with Serve(config(tmp_path), data) as serve:
        typo = cli(data, "grants", "add", "alice", "ordrs__*")
        assert typo.returncode == 0, typo.stderr
        assert typo.stdout.startswith("added grant #") and "allow:ordrs__*@user:alice" in typo.stdout
        assert typo.stderr == (
            "warning: pattern 'ordrs__*' matches no tool registered now: check the spelling (qualified names are "
            "server__tool; server:NAME for a whole server) or that its server is connected (checked against the "
            f"tools of the running serve, pid {serve.proc.pid})\n")
        right = cli(data, "grants", "add", "alice", "rug__*")
        assert right.returncode == 0 and right.stderr == ""
    alone = cli(data, "grants", "add", "alice", "notes__*")  # no serve: nothing to check against, no warning
    assert alone.returncode == 0 and alone.stderr == ""

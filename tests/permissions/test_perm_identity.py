"""Fail closed on identity and audit every CLI call (issue 11 findings 3 and 4).

``--user NAME`` must name an existing user: an unknown name, or a data folder without users (a
desktop client that dropped ``TOOLHOST_HOME``), exits 2 before any server starts, never serving in
open access. ``toolhost call`` is audited as ``local:<os user>`` (or the ``--user``).
"""

from __future__ import annotations

import getpass
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from host.access import AccessControl
from servers.cli.app import app


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(
        {"mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}}
    ))
    return path


def _serve(tmp_path, config, data, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "servers.cli.app", "serve", "--stdio", "--config", str(config), "--data-dir", str(data),
         *extra],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )


def test_serve_with_user_on_an_empty_store_exits_2(tmp_path, config):
    run = _serve(tmp_path, config, tmp_path / "empty", "--user", "alice")
    assert run.returncode == 2
    err = " ".join(run.stderr.split())
    assert "--user alice: the permission database in" in err and "has no users" in err
    assert "refusing open access" in err and "TOOLHOST_HOME" in err
    assert "open access" not in err.replace("refusing open access", "")


def test_serve_with_an_unknown_user_exits_2(tmp_path, config):
    data = tmp_path / "data"
    with _nullctx(AccessControl.open(data)) as a:
        a.users.add("bob")
    run = _serve(tmp_path, config, data, "--user", "alice")
    assert run.returncode == 2
    assert "--user alice: no such user in" in " ".join(run.stderr.split())


class _nullctx:
    def __init__(self, value):
        self.value = value

    def __enter__(self):
        return self.value

    def __exit__(self, *exc):
        self.value.close()


@pytest.mark.parametrize("users", [[], ["bob"]])
def test_cli_commands_with_an_unknown_user_exit_2(tmp_path, config, users):
    data = tmp_path / "data"
    with _nullctx(AccessControl.open(data)) as a:
        for u in users:
            a.users.add(u)
    runner = CliRunner()
    for args in (["call", "orders__get_order", '{"order_id": "A1001"}'], ["tools"], ["search", "order"]):
        res = runner.invoke(app, [*args, "--user", "alice", "--config", str(config), "--data-dir", str(data)])
        assert res.exit_code == 2, res.output
        assert "--user alice:" in " ".join(res.output.split())


def test_cli_calls_are_audited_with_the_local_principal(tmp_path, config):
    data = tmp_path / "data"
    runner = CliRunner()
    res = runner.invoke(app, ["call", "orders__get_order", '{"order_id": "A1001", "api_key": "sk-live-abcdef1234567890"}',
                              "--config", str(config), "--data-dir", str(data)])
    assert res.exit_code in (0, 1), res.output
    with _nullctx(AccessControl.open(data)) as a:
        a.users.add("alice")
        a.grants.add("alice", "orders__get_order")
    res2 = runner.invoke(app, ["call", "orders__get_order", '{"order_id": "A1001"}', "--user", "alice",
                               "--config", str(config), "--data-dir", str(data)])
    assert res2.exit_code == 0, res2.output
    with _nullctx(AccessControl.open(data)) as a:
        rows = a.audit_log.query(action="call")
        assert a.audit_log.verify()[1] is None
    assert [(r.user, r.tool, r.decision) for r in rows] == [
        ("alice", "orders__get_order", "allow"),
        (f"local:{getpass.getuser()}", "orders__get_order", "allow"),
    ]
    assert "sk-live-abcdef1234567890" not in (rows[1].arguments or "")
    assert rows[1].status in ("ok", "invalid_arguments")

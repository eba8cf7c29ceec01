"""Every command finds the database through --db-url, $TOOLHOST_DATABASE_URL or the older $TOOLHOST_DB_URL."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from host.store import Store, Users
from servers.cli.app import app

TOOLHOST = str(Path(sys.executable).parent / "toolhost")


def _users(url: str) -> list[str]:
    store = Store.open(url)
    try:
        return [u.name for u in Users(store).list()]
    finally:
        store.close()


def test_admin_commands_read_the_database_url_from_the_environment(tmp_path: Path, store_url: str) -> None:
    runner = CliRunner()
    old = f"sqlite:///{tmp_path / 'old.db'}"
    assert runner.invoke(app, ["users", "add", "alice"], env={"TOOLHOST_DATABASE_URL": store_url}).exit_code == 0
    assert runner.invoke(app, ["users", "add", "bob"], env={"TOOLHOST_DB_URL": old}).exit_code == 0
    # both set: the new name wins; --db-url wins over both
    both = {"TOOLHOST_DATABASE_URL": store_url, "TOOLHOST_DB_URL": old}
    assert runner.invoke(app, ["users", "add", "carol"], env=both).exit_code == 0
    assert runner.invoke(app, ["users", "add", "dave", "--db-url", old], env=both).exit_code == 0
    assert _users(store_url) == ["alice", "carol"]
    assert _users(old) == ["bob", "dave"]
    listed = runner.invoke(app, ["users", "list"], env={"TOOLHOST_DATABASE_URL": store_url})
    assert listed.exit_code == 0 and "alice" in listed.stdout and "bob" not in listed.stdout


def test_serve_refuses_to_start_on_an_unreachable_database(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "TOOLHOST_DATABASE_URL": f"postgresql://toolhost:pw-123@127.0.0.1:{port}/toolhost"}
    done = subprocess.run([TOOLHOST, "serve", "--port", "0", "--data-dir", str(tmp_path / "d")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    err = " ".join(done.stderr.split())
    assert f"cannot reach the database at postgresql://toolhost:***@127.0.0.1:{port}/toolhost" in err
    assert "pw-123" not in done.stderr + done.stdout

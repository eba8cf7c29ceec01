"""``toolhost backup`` / ``restore`` refusals and replacing an older backup (no serve needed)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from host.access import AccessControl
from servers.cli.app import app

runner = CliRunner()


def run(*args: str, ok: bool = True) -> str:
    result = runner.invoke(app, list(args))
    assert (result.exit_code == 0) is ok, result.output
    return result.output


def folder(tmp_path: Path, *users: str) -> Path:
    data = tmp_path / "data"
    access = AccessControl.open(data)
    try:
        for user in users:
            access.users.add(user)
    finally:
        access.close()
    return data


def test_force_replaces_only_an_older_backup(tmp_path: Path) -> None:
    data = folder(tmp_path, "alice")
    target = tmp_path / "bk"
    run("backup", str(target), "--data-dir", str(data))
    first = json.loads((target / "toolhost-backup.json").read_text())["created_at"]
    out = run("backup", str(target), "--data-dir", str(data), ok=False)
    assert "exists and is not an empty folder; give a new path (or --force to replace an older backup there)" in out
    run("backup", str(target), "--force", "--data-dir", str(data))
    assert json.loads((target / "toolhost-backup.json").read_text())["created_at"] > first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bk", "data"]  # no .partial / .old left
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    out = run("backup", str(other), "--force", "--data-dir", str(data), ok=False)
    assert "exists and is not an empty folder; give a new path" in out
    assert (other / "keep.txt").read_text() == "mine"  # a folder toolhost did not write is never replaced


def test_backup_refuses_a_target_inside_the_data_folder_and_a_folder_without_a_database(tmp_path: Path) -> None:
    data = folder(tmp_path, "alice")
    out = run("backup", str(data / "bk"), "--data-dir", str(data), ok=False)
    assert f"is inside the data folder {data.resolve()}; write the backup elsewhere" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    out = run("backup", str(tmp_path / "bk"), "--data-dir", str(empty), ok=False)
    assert f"no permission database at {empty.resolve() / 'toolhost.db'}: nothing to back up" in out
    assert not (tmp_path / "bk").exists()


def test_restore_refuses_what_is_no_backup_and_force_replaces_a_folder(tmp_path: Path) -> None:
    data = folder(tmp_path, "alice", "bob")
    out = run("restore", str(data), "--data-dir", str(tmp_path / "new"), ok=False)
    assert "is not a toolhost backup (no readable toolhost-backup.json)" in out
    run("backup", str(tmp_path / "bk"), "--data-dir", str(data))
    target = tmp_path / "target"
    target.mkdir()
    (target / "stale.txt").write_text("old")
    (target / "toolhost.db-wal").write_text("a stale write-ahead log must not survive")
    out = run("restore", str(tmp_path / "bk"), "--data-dir", str(target), ok=False)
    assert "is not empty (2 entries, e.g. stale.txt)" in out and "--force" in out
    run("restore", str(tmp_path / "bk"), "--force", "--data-dir", str(target))
    assert sorted(p.name for p in target.iterdir() if p.name != "serve.lock") == ["approvals.key", "toolhost.db"]
    access = AccessControl.open(target)
    try:
        assert [u.name for u in access.users.list()] == ["alice", "bob"]
    finally:
        access.close()

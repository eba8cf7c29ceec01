"""``toolhost backup PATH`` and ``toolhost restore PATH``: the data folder's state, safely, while serve runs.

What a backup holds (everything of the data folder but :data:`SKIPPED`):

* ``toolhost.db``: the SQLite permission store (users, keys, grants, roles, pins, approvals, the
  audit chain), copied with SQLite's online backup API (:func:`host.store.backup.copy_sqlite`), so
  a serve may keep answering calls; with PostgreSQL as the store the database is not in the folder:
  ``pg_dump`` backs it up (the manifest and the command's output say so);
* ``approvals.key`` (open approvals' sealed arguments), ``servers/`` (stdio servers' working
  folders), ``oauth/`` (upstream OAuth tokens), ``events/`` and any other file, copied as they are
  (a server writing its folder at that moment may be caught mid-write);
* ``toolhost-backup.json``: the manifest (toolhost version, when, store kind, what was skipped).

Skipped (:data:`SKIPPED`): what belongs to the running serve (``admin.token``, ``serve.json``,
``serve.lock``, the SQLite ``-wal``/``-shm`` files, whose contents the database copy includes) and
what is rebuilt or temporary (``search/`` caches, ``spill/``, ``logs/``).

``restore PATH [--data-dir DIR] [--force]`` copies a backup into a data folder while holding the
folder's serve lock (:func:`servers.shared.endpoint.claim_data_dir`): refused while a serve runs on
it, and refused for a non-empty folder unless ``--force`` (which first removes the folder's
contents). Errors exit 1 with one ``error:`` line naming the path and the fix.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from servers.cli.admin_common import AsJson, DataDir, DbUrl, fail, print_json

__all__ = ["MANIFEST", "SKIPPED", "backup", "restore"]

MANIFEST = "toolhost-backup.json"
DB_FILE = "toolhost.db"
SKIPPED: dict[str, str] = {
    "admin.token": "the running serve's local admin token; a new serve writes its own",
    "serve.json": "the running serve's address",
    "serve.lock": "the running serve's lock",
    f"{DB_FILE}-wal": "included in the database copy",
    f"{DB_FILE}-shm": "included in the database copy",
    f"{DB_FILE}-journal": "included in the database copy",
    "search": "search caches, rebuilt at start",
    "spill": "temporary large results",
    "logs": "upstream servers' stderr logs, diagnostics only",
}
"""Entries of the data folder a backup leaves out, with why."""


def _data_root(data_dir: Path | None) -> Path:
    from host.paths import data_dir as resolve

    return Path(resolve(data_dir)).resolve()


def _copy_entry(src: Path, dest: Path) -> bool:
    """Copy a file, symlink or folder (symlinks as links); ``False`` for anything else (a socket, a fifo)."""
    if src.is_symlink() or src.is_file():
        shutil.copy2(src, dest, follow_symlinks=False)
    elif src.is_dir():
        shutil.copytree(src, dest, symlinks=True, ignore_dangling_symlinks=True)
    else:
        return False
    return True


def _sqlite_file(root: Path, db_url: str | None) -> Path | None:
    """The SQLite file of the store (``None``: a PostgreSQL store, backed up with ``pg_dump``)."""
    if not db_url:
        return root / DB_FILE
    from host.store.engine import normalize_url

    url = normalize_url(db_url)
    return Path(url.database).resolve() if url.get_backend_name() == "sqlite" and url.database else None


def make_backup(root: Path, target: Path, db_url: str | None, *, replace: bool = False) -> dict[str, Any]:
    """Write a backup of data folder ``root`` to the new folder ``target``; returns its manifest.

    Written to a sibling ``.partial`` folder first and renamed at the end, so ``target`` is either
    a whole backup or absent; with ``replace`` an older backup at ``target`` (a folder with a
    :data:`MANIFEST`) is swapped out only once the new one is complete.

    Raises:
        ValueError: ``target`` exists and is not empty (``replace``: and is no backup), or lies inside ``root``.
        host.store.backup.BackupFailed: the SQLite copy failed.
    """
    from host.store.backup import copy_sqlite
    from host.upstream.implementation import toolhost_version

    target = target.resolve()
    if target == root or root in target.parents:
        raise ValueError(f"{target} is inside the data folder {root}; write the backup elsewhere")
    older = target.exists() and (not target.is_dir() or any(target.iterdir()))
    if older and not (replace and (target / MANIFEST).is_file()):
        raise ValueError(f"{target} exists and is not an empty folder; give a new path"
                         + ("" if replace else " (or --force to replace an older backup there)"))
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(mode=0o700, parents=True)
    try:
        database = _sqlite_file(root, db_url)
        store = "sqlite" if database is not None else "postgresql"
        copied: list[str] = []
        if database is not None:
            if not database.is_file():
                raise ValueError(f"no permission database at {database}: nothing to back up (another --data-dir?)")
            copy_sqlite(database, partial / DB_FILE)
            copied.append(DB_FILE)
        for entry in sorted(root.iterdir()):
            if entry.name in SKIPPED or entry.name == DB_FILE:
                continue
            if _copy_entry(entry, partial / entry.name):
                copied.append(entry.name)
        manifest = {"toolhost": toolhost_version(), "created_at": time.time(), "data_dir": str(root),
                    "store": store, "copied": copied,
                    "skipped": {k: v for k, v in SKIPPED.items() if (root / k).exists()}}
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        if older:
            target.rename(target.with_name(target.name + ".old"))
        elif target.exists():
            target.rmdir()
        partial.rename(target)
        if older:
            shutil.rmtree(target.with_name(target.name + ".old"))
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return manifest


def restore_backup(source: Path, root: Path, *, force: bool) -> dict[str, Any]:
    """Copy the backup ``source`` into data folder ``root`` (created 0700); returns the backup's manifest.

    Raises:
        ValueError: ``source`` is no backup (no manifest), or ``root`` is not empty without ``force``.
        servers.shared.endpoint.ServeRunning: a serve runs on ``root`` (its message names it).
    """
    from servers.shared.endpoint import LOCK_FILE, claim_data_dir

    try:
        manifest = json.loads((source / MANIFEST).read_text())
    except (OSError, ValueError):
        raise ValueError(f"{source} is not a toolhost backup (no readable {MANIFEST}); "
                         "give the folder `toolhost backup PATH` wrote") from None
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    claim = claim_data_dir(root)  # held while restoring: no serve starts on a half-restored folder
    try:
        present = [e for e in root.iterdir() if e.name != LOCK_FILE]
        if present and not force:
            raise ValueError(f"the data folder {root} is not empty ({len(present)} entries, e.g. "
                             f"{sorted(e.name for e in present)[0]}); restore into an empty folder "
                             "(--data-dir) or pass --force to replace its contents")
        for entry in present:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        for entry in sorted(source.iterdir()):
            if entry.name != MANIFEST:
                _copy_entry(entry, root / entry.name)
        os.chmod(root, 0o700)
    finally:
        claim.release()
    return manifest


def _postgres_note(manifest: dict[str, Any]) -> str | None:
    if manifest["store"] != "postgresql":
        return None
    return ("the permission store is PostgreSQL: its database is not in the data folder; back it up with "
            "pg_dump (pg_dump -Fc -f toolhost.dump \"$TOOLHOST_DATABASE_URL\") and restore it with pg_restore")


def backup(
    path: Annotated[Path, typer.Argument(help="New (or empty) folder to write the backup to.")],
    force: Annotated[bool, typer.Option("--force", help="Replace an older backup at PATH (only a folder "
                                                        "`toolhost backup` wrote).")] = False,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """Back up the data folder (users, keys, grants, roles, pins, approvals, audit, approvals key,
    servers' folders) to PATH; safe while serve runs. Search caches, logs and the running serve's
    files are skipped."""
    from host.store.backup import BackupFailed

    root = _data_root(data_dir)
    if not root.is_dir():
        fail(f"no data folder at {root}; pass --data-dir or set TOOLHOST_HOME")
    try:
        manifest = make_backup(root, path, db_url, replace=force)
    except (ValueError, BackupFailed, OSError) as e:
        fail(f"backup to {path}: {e}")
    if as_json:
        print_json(manifest)
        return
    typer.echo(f"backed up {root} to {path.resolve()}: {', '.join(manifest['copied']) or 'nothing'}")
    if manifest["skipped"]:
        typer.echo("skipped: " + "; ".join(f"{k} ({v})" for k, v in manifest["skipped"].items()))
    note = _postgres_note(manifest)
    if note:
        typer.echo(f"note: {note}")


def restore(
    path: Annotated[Path, typer.Argument(help="A folder written by `toolhost backup`.")],
    force: Annotated[bool, typer.Option("--force", help="Replace the contents of a non-empty data folder.")] = False,
    data_dir: DataDir = None,
    as_json: AsJson = False,
) -> None:
    """Restore a backup into the data folder (refused while a serve runs on it, and into a non-empty
    folder unless --force); then start `toolhost serve` on it."""
    from servers.shared.endpoint import ServeRunning

    root = _data_root(data_dir)
    try:
        manifest = restore_backup(path.resolve(), root, force=force)
    except ServeRunning as e:
        fail(f"restore into {root}: {e}")
    except (ValueError, OSError) as e:
        fail(f"restore into {root}: {e}")
    if as_json:
        print_json({"data_dir": str(root), **manifest})
        return
    typer.echo(f"restored {path.resolve()} into {root}; start it with toolhost serve --data-dir {root}")
    note = _postgres_note(manifest)
    if note:
        typer.echo(f"note: {note}")

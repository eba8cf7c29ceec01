"""A consistent copy of the SQLite permission store while other processes use it.

SQLite's online backup API (``sqlite3_backup_*``, https://www.sqlite.org/backup.html, through the
stdlib's :meth:`sqlite3.Connection.backup`) copies the database page by page; a write by another
connection during the copy restarts it, so the result is one committed state, WAL contents
included (the copy is a single file without ``-wal``/``-shm``). PostgreSQL stores are copied with
``pg_dump`` instead (not here).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from host.store.engine import BUSY_TIMEOUT_SECONDS

__all__ = ["BackupFailed", "copy_sqlite"]

PAGES_PER_STEP = 1024
"""Pages copied per backup step (4 MiB at SQLite's default 4 KiB pages); writers get the lock between steps."""


class BackupFailed(Exception):
    """The SQLite copy could not be made or is not intact. Attributes: source, reason."""

    def __init__(self, source: Path, reason: str) -> None:
        self.source, self.reason = source, reason
        super().__init__(f"copying the database {source} failed: {reason}")


def copy_sqlite(source: Path, dest: Path) -> int:
    """Copy the SQLite database ``source`` to the new file ``dest`` (mode 0600) and check the copy.

    Returns:
        The copy's size in pages.

    Raises:
        BackupFailed: ``source`` is missing or unreadable, the copy failed, or SQLite's
            ``PRAGMA integrity_check`` of the copy is not ``ok``.
    """
    if not source.is_file():
        raise BackupFailed(source, "no such file")
    os.close(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS)
        try:
            out = sqlite3.connect(dest)
            try:
                src.backup(out, pages=PAGES_PER_STEP)
                [(check,)] = out.execute("PRAGMA integrity_check(1)").fetchall()
                [(pages,)] = out.execute("PRAGMA page_count").fetchall()
            finally:
                out.close()
        finally:
            src.close()
    except sqlite3.Error as e:
        raise BackupFailed(source, str(e)) from None
    if check != "ok":
        raise BackupFailed(source, f"the copy is not intact ({check})")
    return int(pages)

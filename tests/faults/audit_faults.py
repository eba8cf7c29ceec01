"""Shared pieces of the audit fault tests: a recording upstream's config, ways to make the audit
store unwritable, and the per-call verdict ("ran and audited" / "not sent and said so" / "ran
without a row")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from host.access import AccessControl
from host.calls import ToolResult

__all__ = [
    "RECORDER",
    "DiskFiller",
    "LockHolder",
    "audited_keys",
    "recorder_config",
    "verdict",
    "verdicts",
    "wait_started",
]

RECORDER = Path(__file__).with_name("recording_upstream.py")

RAN_AUDITED = "ran and audited"
NOT_SENT = "not sent and said so"
RAN_NO_ROW = "ran without a row"
NOT_SENT_SILENT = "not sent, not said"


def recorder_config(calls_dir: Path, **toolhost: Any) -> dict[str, Any]:
    """A config with the recording upstream as server ``rec`` and ``toolhost`` defaults."""
    return {
        "toolhost": {"audit_wait_seconds": 1.0, **toolhost},
        "mcpServers": {"rec": {"command": sys.executable, "args": [str(RECORDER), str(calls_dir)]}},
    }


async def wait_started(calls_dir: Path, key: str) -> None:
    """Until the upstream received the call for ``key`` (bound it with ``anyio.fail_after``)."""
    while not (calls_dir / f"{key}.started").exists():
        await anyio.sleep(0.02)


def audited_keys(access: AccessControl) -> set[str]:
    """``key`` argument of every ``call`` row of the recording upstream's tools."""
    assert access.audit_writer.flush(timeout=60), "queued audit rows were not written within 60 s"
    keys = set()
    for row in access.audit_log.query(action="call", limit=100_000):
        if row.tool and row.tool.startswith("rec__") and row.arguments:
            keys.add(json.loads(row.arguments)["key"])
    return keys


def verdict(result: ToolResult, calls_dir: Path, key: str, audited: set[str]) -> str:
    """One call's verdict: did the upstream get it, does it have its row, and what was answered."""
    ran = (calls_dir / f"{key}.started").exists()
    if ran:
        return RAN_AUDITED if key in audited else RAN_NO_ROW
    if result.error is not None and result.error.details.get("sent") is False:
        return NOT_SENT
    return NOT_SENT_SILENT


def verdicts(calls: dict[str, ToolResult], calls_dir: Path, access: AccessControl) -> dict[str, str]:
    audited = audited_keys(access)
    return {key: verdict(res, calls_dir, key, audited) for key, res in calls.items()}


def table(situation: str, found: dict[str, str]) -> str:
    """One line of the report table: situation → counts per verdict."""
    counts = Counter(found.values())
    return f"{situation}: " + ", ".join(f"{k}={counts.get(k, 0)}" for k in (RAN_AUDITED, NOT_SENT, RAN_NO_ROW))


_HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


class LockHolder:
    """Another process holding the SQLite database's write lock until :meth:`release`."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(db)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if line.strip() != "locked":
            self.release()
            raise RuntimeError(f"the lock holder did not take the lock (said {line!r})")

    def release(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextmanager
def hold_lock(db: Path) -> Iterator[LockHolder]:
    holder = LockHolder(db)
    try:
        yield holder
    finally:
        holder.release()


class DiskFiller:
    """A small tmpfs volume (mounted at ``mount``) that :meth:`fill` fills up and :meth:`free` empties."""

    def __init__(self, mount: Path, size_mib: int = 8) -> None:
        self.mount = mount
        mount.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(mount)], check=True,
                       capture_output=True, text=True)
        self.filler = mount / "filler"

    def fill(self) -> None:
        """Write zeros until the volume reports ENOSPC."""
        chunk = b"\0" * 65536
        with open(self.filler, "ab", buffering=0) as f:
            try:
                while True:
                    f.write(chunk)
            except OSError:
                pass
            small = b"\0" * 512
            try:
                while True:
                    f.write(small)
            except OSError:
                pass
        assert os.statvfs(self.mount).f_bavail == 0

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.mount)], check=False, capture_output=True)

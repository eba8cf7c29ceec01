"""``<data_dir>/serve.json``: what a running ``toolhost serve`` writes so the CLI of the same data
folder finds it (``{"url", "pid", "store", "config"}``; see :mod:`servers.cli.serve_client`)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ENDPOINT_FILE", "LOCK_FILE", "LiveServe", "ServeClaim", "ServeRunning", "claim_data_dir", "endpoint_record",
           "live_serve", "remove_if_ours", "store_fingerprint"]

ENDPOINT_FILE = "serve.json"
LOCK_FILE = "serve.lock"
"""Held (``flock``, exclusive) by the HTTP serve of a data folder for its whole life, from before
it writes ``admin.token``; the kernel releases it when the process ends, even by a crash."""


def store_fingerprint(data_dir: Path, db_url: str | None) -> str:
    """Which permission store a process uses, as 16 hex digits (the URL may hold a password)."""
    ident = db_url or f"sqlite:{(Path(data_dir) / 'toolhost.db').resolve()}"
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def endpoint_record(url: str, data_dir: Path, db_url: str | None, config: Path | None) -> dict[str, Any]:
    """What ``serve`` writes to ``serve.json``."""
    return {"url": url, "pid": os.getpid(), "store": store_fingerprint(data_dir, db_url),
            "config": str(Path(config).resolve()) if config is not None else None}


LIVENESS_TIMEOUT_SECONDS = 3.0


@dataclass(frozen=True)
class LiveServe:
    """A running serve as recorded in ``serve.json``: its process id and base URL."""

    pid: int
    url: str

    @property
    def refusal(self) -> str:
        """Why a second HTTP serve may not share this data folder, and how to proceed."""
        return (f"another toolhost serve (pid {self.pid}, {self.url}/mcp) is running on this data folder "
                f"and owns its serve.json and admin.token: stop it (kill {self.pid}) or start this one "
                "with another --data-dir")


def live_serve(data_dir: Path) -> LiveServe | None:
    """The serve recorded in ``<data_dir>/serve.json`` if it is alive: its pid exists and its
    ``/healthz`` answers within :data:`LIVENESS_TIMEOUT_SECONDS`. A record left by a crash (no such
    process, or a reused pid that does not answer) is ``None``: it never blocks a new serve."""
    try:
        info = json.loads((Path(data_dir) / ENDPOINT_FILE).read_text())
        url, pid = str(info["url"]), int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another OS user's process
    import httpx2

    try:
        answered = httpx2.get(f"{url}/healthz", timeout=LIVENESS_TIMEOUT_SECONDS).status_code == 200
    except httpx2.HTTPError:
        answered = False
    return LiveServe(pid, url) if answered else None


def remove_if_ours(path: Path | None, content: str) -> None:
    """Delete ``path`` only while it still holds ``content`` (what this process wrote): a file a
    later serve of the same data folder wrote is left to that serve."""
    if path is None:
        return
    try:
        if path.read_text(encoding="utf-8").strip() == content.strip():
            path.unlink()
    except OSError:
        pass


class ServeRunning(Exception):
    """Another HTTP serve holds the data folder; the message names it and how to proceed."""


class ServeClaim:
    """This process's hold on a data folder's :data:`LOCK_FILE` (``release`` once, at close)."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def claim_data_dir(data_dir: Path) -> ServeClaim:
    """Claim ``data_dir`` for one HTTP serve: an exclusive non-blocking ``flock`` on
    :data:`LOCK_FILE` (none on systems without ``fcntl``: then :func:`live_serve` alone decides).

    Raises:
        ServeRunning: another process holds the lock, or the recorded serve is alive
            (:func:`live_serve`); the message names its pid and URL when known.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        fd = None
    else:
        fd = os.open(Path(data_dir) / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            running = live_serve(data_dir)
            raise ServeRunning(running.refusal if running is not None else (
                "another toolhost serve is starting on this data folder (it holds serve.lock): wait for it and "
                "use it, stop it, or start this one with another --data-dir")) from None
    running = live_serve(data_dir)
    if running is not None:
        ServeClaim(fd).release()
        raise ServeRunning(running.refusal)
    return ServeClaim(fd)

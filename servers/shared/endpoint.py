"""``<data_dir>/serve.json``: what a running ``toolhost serve`` writes so the CLI of the same data
folder finds it (``{"url", "pid", "store", "config"}``; see :mod:`servers.cli.serve_client`)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

__all__ = ["ENDPOINT_FILE", "endpoint_record", "store_fingerprint"]

ENDPOINT_FILE = "serve.json"


def store_fingerprint(data_dir: Path, db_url: str | None) -> str:
    """Which permission store a process uses, as 16 hex digits (the URL may hold a password)."""
    ident = db_url or f"sqlite:{(Path(data_dir) / 'toolhost.db').resolve()}"
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def endpoint_record(url: str, data_dir: Path, db_url: str | None, config: Path | None) -> dict[str, Any]:
    """What ``serve`` writes to ``serve.json``."""
    return {"url": url, "pid": os.getpid(), "store": store_fingerprint(data_dir, db_url),
            "config": str(Path(config).resolve()) if config is not None else None}

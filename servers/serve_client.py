"""The CLI's client of a running ``toolhost serve`` on the same data folder (through the admin API).

``serve`` writes ``<data_dir>/serve.json`` (``{"url", "pid"}``) and the local admin token
``<data_dir>/admin.token``; both are removed when it stops. :func:`running_serve` returns a client
only when both exist, the process is alive and the URL is on loopback; any failure of a request
returns ``None`` so the CLI falls back to doing the work itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["RunningServe", "running_serve"]

REQUEST_TIMEOUT_SECONDS = 10.0


class RunningServe:
    """A running serve's admin API at ``url`` with the local admin ``token``."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any | None:
        """GET ``/admin/api{path}`` as JSON, or ``None`` on any failure."""
        import httpx2  # noqa: PLC0415 - only when a serve runs

        try:
            r = httpx2.get(f"{self.url}/admin/api{path}", params=params,
                           headers={"Authorization": f"Bearer {self.token}"}, timeout=REQUEST_TIMEOUT_SECONDS)
        except httpx2.HTTPError:
            return None
        if r.status_code != 200:
            return None
        return r.json()

    def search(self, query: str, user: str | None, limit: int) -> dict[str, Any] | None:
        params: dict[str, Any] = {"q": query, "limit": limit}
        if user:
            params["user"] = user
        return self.get("/search", params)


def running_serve(data_dir: Path | None) -> RunningServe | None:
    """The serve running on ``data_dir`` (resolved like every command), or ``None``."""
    from host.paths import data_dir as resolve  # noqa: PLC0415

    try:
        root = resolve(data_dir)
        info = json.loads((root / "serve.json").read_text())
        token = (root / "admin.token").read_text().strip()
        url, pid = str(info["url"]), int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    host = urlsplit(url).hostname or ""
    if host not in ("127.0.0.1", "localhost", "::1") and not host.startswith("127."):
        return None
    return RunningServe(url, token)

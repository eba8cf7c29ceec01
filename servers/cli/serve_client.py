"""The CLI's client of a running ``toolhost serve`` on the same data folder (through the admin API).

``serve`` (over HTTP) writes ``<data_dir>/serve.json`` (``{"url", "pid", "store", "config"}``) and
the local admin token ``<data_dir>/admin.token`` (0600, new per start); both are removed when it
stops. :func:`running_serve` returns a client only when both exist, the process is alive, the URL
is on loopback (the token is accepted from loopback only; anything else is refused here, never
sent), and the serve uses the same permission store (``store``: a fingerprint of the database
URL, never the URL itself) and, when ``--config`` is given, the same config file.

Errors: :class:`ServeUnavailable` (no answer, or the serve cannot do it: 501/503) means "do it
yourself" — the CLI falls back to opening the database / connecting the servers; any other error
answer is a :class:`ServeError` carrying the API's ``code`` and ``message`` (shown as the
command's one ``error:`` line, exactly as the local path would word it).
"""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from servers.shared.endpoint import ENDPOINT_FILE, store_fingerprint

__all__ = ["RunningServe", "ServeError", "ServeUnavailable", "running_serve"]

REQUEST_TIMEOUT_SECONDS = 10.0
CALL_TIMEOUT_SECONDS = 3600.0
"""A tool call through the serve may run as long as the tool does (its own timeout applies there)."""
FALLBACK_STATUSES = (501, 503)


class ServeUnavailable(Exception):
    """The running serve did not answer, or cannot do this (the CLI then does it itself)."""


class ServeError(Exception):
    """An error answer of the admin API: HTTP ``status``, ``code`` and the ``message`` naming the fix."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _actor() -> str:
    """Who this CLI acts as on the serve's admin API (``local:<os user>``, audited as the actor)."""
    from servers.shared.local_principal import local_principal_name

    return local_principal_name()


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RunningServe:
    """A running serve's admin API at ``url`` with the local admin ``token``."""

    def __init__(self, url: str, token: str) -> None:
        if not is_loopback_url(url):
            raise ValueError(f"the local admin token is only sent to loopback, not to {url}")
        self.url = url
        self.token = token

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                body: dict[str, Any] | None = None, timeout: float = REQUEST_TIMEOUT_SECONDS) -> Any:
        """``method /admin/api{path}``; the JSON answer (text for non-JSON answers).

        Raises:
            ServeUnavailable: connection refused/reset before an answer, or status 501/503.
            ServeError: any other error status (``code``/``message`` from the API's error body).
        """
        import httpx2  # lazy: only when a serve runs

        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            r = httpx2.request(method, f"{self.url}/admin/api{path}", params=clean, json=body,
                               headers={"Authorization": f"Bearer {self.token}", "X-Toolhost-Actor": _actor()},
                               timeout=timeout)
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as e:
            raise ServeUnavailable(str(e)) from None
        except httpx2.HTTPError as e:
            raise ServeError(0, "transport", f"the running toolhost serve at {self.url} did not answer: {e}") from None
        if r.status_code in FALLBACK_STATUSES:
            raise ServeUnavailable(r.text)
        if r.status_code >= 400:
            try:
                error = r.json()["error"]
                code, message = str(error["code"]), str(error["message"])
            except (ValueError, KeyError, TypeError):
                code, message = "http_error", f"HTTP {r.status_code} from {self.url}: {r.text[:200]}"
            raise ServeError(r.status_code, code, message)
        if "json" in r.headers.get("content-type", ""):
            return r.json()
        return r.text

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any | None:
        """GET ``/admin/api{path}`` as JSON, or ``None`` on any failure."""
        try:
            return self.request("GET", path, params=params)
        except (ServeUnavailable, ServeError):
            return None

    def search(self, query: str, user: str | None, limit: int) -> dict[str, Any] | None:
        params: dict[str, Any] = {"q": query, "limit": limit}
        if user:
            params["user"] = user
        return self.get("/search", params)


def running_serve(data_dir: Path | None, *, db_url: str | None = None,
                  config: Path | None = None, any_store: bool = False) -> RunningServe | None:
    """The serve running on ``data_dir`` (resolved like every command) with the same permission store
    (``db_url``; ``any_store``: whatever store it uses, for commands that act on state only the serve
    holds, e.g. ``toolhost reconnect``) and, when ``config`` is given, the same config file; else ``None``.

    ``TOOLHOST_NO_SERVE=1`` always answers ``None`` (the CLI then works on its own)."""
    from host.paths import data_dir as resolve

    if os.environ.get("TOOLHOST_NO_SERVE", "") not in ("", "0"):
        return None
    try:
        root = resolve(data_dir)
        info = json.loads((root / ENDPOINT_FILE).read_text())
        token = (root / "admin.token").read_text().strip()
        url, pid = str(info["url"]), int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    if not is_loopback_url(url) or not token:
        return None
    if not any_store and info.get("store") not in (None, store_fingerprint(root, db_url)):
        return None
    if config is not None and info.get("config") != str(Path(config).resolve()):
        return None
    return RunningServe(url, token)

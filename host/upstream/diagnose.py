"""One-line, actionable reasons for a server that cannot be reached or started.

Each reason names the JSON path to change and how to fix it, e.g.
``mcpServers.git.command: 'uvx' was not found on PATH (install it, or give the full path)``.
:func:`preflight` checks a stdio entry before spawning (command, ``cwd``, executable bit);
:func:`diagnose` explains an exception from a connect attempt (HTTP 401/403 naming the header
and quoting ``WWW-Authenticate``, TLS and DNS failures, refused connections). A problem only the
configuration can fix is *fatal* (the server stays ``failed``; it is not retried in this run).
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
from dataclasses import dataclass

import httpx2

from host.config import RemoteServerConfig, ServerConfig, StdioServerConfig
from host.upstream.forward_call import describe_exception

__all__ = ["Problem", "diagnose", "preflight"]


@dataclass(frozen=True)
class Problem:
    """Why a server is down: ``reason`` (one line) and whether retrying can help (``fatal``)."""

    reason: str
    fatal: bool


def preflight(cfg: StdioServerConfig, env: dict[str, str]) -> Problem | None:
    """A problem with a stdio entry found without starting it, or ``None``."""
    path = f"mcpServers.{cfg.name}"
    if cfg.cwd is not None and not os.path.isdir(cfg.cwd):
        return Problem(f"{path}.cwd: folder {cfg.cwd!r} does not exist (create it or fix the path; a relative "
                       "cwd is resolved against the config file's folder)", True)
    cmd = cfg.command
    if os.sep in cmd or (os.altsep and os.altsep in cmd):
        full = cmd if os.path.isabs(cmd) else os.path.join(cfg.cwd or os.getcwd(), cmd)
        if not os.path.exists(full):
            return Problem(f"{path}.command: {cmd!r} does not exist (fix the path)", True)
        if os.path.isdir(full) or not os.access(full, os.X_OK):
            return Problem(f"{path}.command: {cmd!r} is not executable (chmod +x it, or run it through its "
                           "interpreter, e.g. \"command\": \"python3\", \"args\": [script])", True)
        return None
    found = shutil.which(cmd, path=env.get("PATH", os.defpath))
    if found is None:
        return Problem(f"{path}.command: {cmd!r} was not found on PATH (install it, give its full path, or set "
                       f"PATH in {path}.env)", True)
    return None


def _causes(err: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    stack = [err]
    while stack and len(out) < 50:
        e = stack.pop()
        out.append(e)
        if isinstance(e, BaseExceptionGroup):
            stack.extend(e.exceptions)
        for nxt in (e.__cause__, e.__context__):
            if nxt is not None and nxt not in out:
                stack.append(nxt)
    return out


def diagnose(cfg: ServerConfig, err: BaseException, *, http_auth: tuple[int, str | None] | None = None) -> Problem:
    """The reason a connect attempt failed with ``err`` (module docstring)."""
    path = f"mcpServers.{cfg.name}"
    if isinstance(cfg, RemoteServerConfig):
        status, challenge = http_auth or (None, None)
        for e in _causes(err):
            if isinstance(e, httpx2.HTTPStatusError) and e.response.status_code in (401, 403):
                status, challenge = e.response.status_code, e.response.headers.get("www-authenticate")
        if status in (401, 403):
            what = "rejected the credentials (401 Unauthorized)" if status == 401 else "refused access (403 Forbidden)"
            has_auth = any(k.lower() == "authorization" for k in cfg.headers)
            fix = (f"check the token in {path}.headers.Authorization" if has_auth
                   else f"set {path}.headers.Authorization, e.g. \"Bearer ${{TOKEN}}\"")
            quoted = f"; WWW-Authenticate: {challenge}" if challenge else ""
            return Problem(f"{path}.url: the server {what}; {fix}{quoted}", True)
        for e in _causes(err):
            if isinstance(e, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(e):
                return Problem(f"{path}.url: TLS certificate verification failed for {cfg.url} ({_short(e)}); "
                               "use a trusted certificate or set SSL_CERT_FILE to your CA bundle", False)
            if isinstance(e, ssl.SSLError):
                return Problem(f"{path}.url: TLS handshake with {cfg.url} failed ({_short(e)}); check the scheme "
                               "(https vs http) and port", False)
            if isinstance(e, socket.gaierror) or "Name or service not known" in str(e) or \
                    "nodename nor servname" in str(e) or "Temporary failure in name resolution" in str(e):
                return Problem(f"{path}.url: DNS lookup of the host in {cfg.url} failed ({_short(e)}); check the "
                               "host name", False)
            if isinstance(e, ConnectionRefusedError) or "Connection refused" in str(e) or \
                    "All connection attempts failed" in str(e):
                return Problem(f"{path}.url: connection to {cfg.url} refused; is the server running?", False)
    if isinstance(err, FileNotFoundError) and isinstance(cfg, StdioServerConfig):
        return Problem(f"{path}.command: {cfg.command!r} was not found (install it or give its full path)", True)
    if isinstance(err, PermissionError) and isinstance(cfg, StdioServerConfig):
        return Problem(f"{path}.command: {cfg.command!r} is not executable ({_short(err)})", True)
    return Problem(describe_exception(err), False)


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:200]

"""Who may use the admin API and the web console.

Two credentials are accepted:

* the API key (``Authorization: Bearer th_...``) of a user with the ``admin`` role (see
  :data:`servers.admin.actions.ADMIN_ROLE`); from anywhere the server is reachable;
* the **local admin token**: a random token ``toolhost serve`` writes to
  ``<data folder>/admin.token`` (mode 0600, new each start, removed at exit), accepted only from
  loopback clients. The CLI of the same data folder reads it to talk to the running serve.

The console logs in with either and keeps a server-side session (random id in an
``HttpOnly; SameSite=Strict`` cookie scoped to ``/admin``; 8 h idle expiry). Every form carries
the session's CSRF token, and state-changing requests with a foreign ``Origin`` are refused.
Every console request re-validates its session as the admin API validates a bearer key
(:meth:`AdminAuth.current_session`): the key it logged in with is still active, its user still
exists, is not disabled and still holds the ``admin`` role (the local admin token: still from
loopback). A revoked key, a removed role, a disabled or deleted user ends the session at that request.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import anyio
from starlette.requests import Request

from host.store import UserDisabled
from registry import Principal
from servers.admin.actions import ADMIN_ROLE, LOCAL_ADMIN

__all__ = ["AdminAuth", "AdminSession", "CredentialCheck", "TOKEN_FILE", "read_local_token", "write_local_token"]

TOKEN_FILE = "admin.token"
SESSION_COOKIE = "toolhost_admin"
SESSION_IDLE_SECONDS = 8 * 3600
MAX_SESSIONS = 1000


def write_local_token(data_dir: Path) -> tuple[Path, str]:
    """Create ``<data_dir>/admin.token`` (0600) with a fresh token; returns ``(path, token)``."""
    path = Path(data_dir) / TOKEN_FILE
    token = "tha_" + secrets.token_urlsafe(32)
    tmp = path.with_name(f".{TOKEN_FILE}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, token.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path, token


def read_local_token(data_dir: Path) -> str | None:
    """The local admin token of a serve running on ``data_dir`` (``None`` when there is none)."""
    try:
        return (Path(data_dir) / TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None


def is_loopback_client(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


MISSING_CREDENTIAL = "missing credential: send 'Authorization: Bearer <API key of an admin user>'"


class CredentialCheck(NamedTuple):
    """The outcome of checking an admin credential: ``user`` is ``None`` when refused."""

    user: str | None
    key_id: str | None
    """The API key's id (``None``: the local admin token, or refused)."""
    reason: str
    """Why it was refused (``""`` when accepted): the text of the 401 answer."""


@dataclass
class AdminSession:
    """A console session: who, its CSRF token, and when it was last used (UNIX s)."""

    user: str
    key_id: str | None = None
    """The API key the session logged in with (``None``: the local admin token)."""
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    seen: float = field(default_factory=time.time)
    flash_key: dict[str, Any] | None = None
    """A newly created API key (with its secret), kept server-side until the next users page shows
    it once (post-redirect-get: a reload neither shows it again nor creates another key)."""


class AdminAuth:
    """Checks admin credentials and keeps console sessions.

    Args:
        access: the permission store (``None``: only the local token works).
        local_token: the token written by :func:`write_local_token` (``None``: none).
    """

    def __init__(self, access: Any, local_token: str | None) -> None:
        self.access = access
        self.local_token = local_token
        self.sessions: dict[str, AdminSession] = {}

    async def check_token(self, token: str, request: Request) -> tuple[str | None, str]:
        """``(admin user, "")`` for a valid admin credential, else ``(None, reason)``."""
        check = await self.check_credential(token, request)
        return check.user, check.reason

    async def check_credential(self, token: str, request: Request) -> CredentialCheck:
        """The admin user and key id of ``token`` (blank, local admin token or API key), or
        ``user=None`` and the reason it was refused (every refusal is a 401 text)."""
        token = token.strip()
        if not token:
            return CredentialCheck(None, None, MISSING_CREDENTIAL)
        if self.local_token and token.startswith("tha_"):
            if hmac.compare_digest(token, self.local_token):
                if is_loopback_client(request):
                    return CredentialCheck(LOCAL_ADMIN, None, "")
                return CredentialCheck(None, None, "the local admin token is accepted from loopback only")
            return CredentialCheck(None, None, "invalid local admin token (it changes at every `toolhost serve` start)")
        if self.access is None:
            return CredentialCheck(None, None,
                                   "the permission store is off (--auth off): only the local admin token works")
        try:
            principal: Principal | None = await anyio.to_thread.run_sync(self.access.authenticate, token)
        except UserDisabled as e:
            return CredentialCheck(None, None, str(e))
        if principal is None:
            await anyio.to_thread.run_sync(self.access.audit_auth_failure, token)
            return CredentialCheck(None, None, "invalid or revoked API key")
        if ADMIN_ROLE not in principal.roles:
            return CredentialCheck(None, None, (f"user {principal.user} has no '{ADMIN_ROLE}' role "
                                                f"(toolhost roles add {ADMIN_ROLE}; "
                                                f"toolhost roles assign {ADMIN_ROLE} {principal.user})"))
        return CredentialCheck(principal.user, principal.key_id, "")

    async def from_bearer(self, request: Request) -> tuple[str | None, str]:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return None, MISSING_CREDENTIAL
        return await self.check_token(token, request)

    # -- console sessions -----------------------------------------------------------------
    def start_session(self, user: str, key_id: str | None = None) -> tuple[str, AdminSession]:
        self._expire()
        if len(self.sessions) >= MAX_SESSIONS:
            oldest = min(self.sessions, key=lambda k: self.sessions[k].seen)
            del self.sessions[oldest]
        sid = secrets.token_urlsafe(32)
        session = AdminSession(user=user, key_id=key_id)
        self.sessions[sid] = session
        return sid, session

    def session(self, request: Request) -> AdminSession | None:
        sid = request.cookies.get(SESSION_COOKIE)
        if not sid:
            return None
        session = self.sessions.get(sid)
        if session is None or time.time() - session.seen > SESSION_IDLE_SECONDS:
            self.sessions.pop(sid, None)
            return None
        session.seen = time.time()
        return session

    async def current_session(self, request: Request) -> AdminSession | None:
        """The request's session if its rights still hold (see the module docstring), else ``None``
        (and the session is ended)."""
        session = self.session(request)
        if session is None:
            return None
        if await anyio.to_thread.run_sync(self._still_admin, session, is_loopback_client(request)):
            return session
        self.end_session(request)
        return None

    def _still_admin(self, session: AdminSession, loopback: bool) -> bool:
        if session.key_id is None:  # the local admin token of this process
            return session.user == LOCAL_ADMIN and self.local_token is not None and loopback
        if self.access is None:
            return False
        users = self.access.users
        if not users.exists(session.user) or ADMIN_ROLE not in users.roles_of(session.user):
            return False
        if users.get(session.user).disabled:
            return False
        return any(k.key_id == session.key_id and k.active for k in self.access.keys.list(session.user))

    def end_session(self, request: Request) -> None:
        self.sessions.pop(request.cookies.get(SESSION_COOKIE, ""), None)

    def _expire(self) -> None:
        cutoff = time.time() - SESSION_IDLE_SECONDS
        for sid in [k for k, v in self.sessions.items() if v.seen < cutoff]:
            del self.sessions[sid]


def same_origin(request: Request) -> bool:
    """False when the request names an ``Origin`` other than the host it was sent to (CSRF)."""
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    return origin.split("://", 1)[-1] == host

"""API keys: random bearer tokens shown once, stored only as a scrypt hash.

Token format: ``th_<key_id>_<secret>``: ``key_id`` is 12 lowercase hex digits (looked up by
primary key), ``secret`` 43 URL-safe characters (256 random bits, :func:`secrets.token_urlsafe`).
Stored: the key id, a 16-byte random salt and ``hashlib.scrypt(secret, salt, n=2**14, r=8, p=1,
dklen=32)``, with the KDF parameters in ``kdf`` (``scrypt:16384:8:1``) so they can be raised later.
The plain token is never stored or logged.

Verifying runs scrypt (tens of ms). To keep per-request authentication cheap, a successful
verification is remembered in memory as ``sha256(token)`` for that key id; later requests compare
that digest in constant time and still re-read the key row, so revocation takes effect at the
next request. ``last_used_at`` is written at most every :data:`LAST_USED_RESOLUTION_SECONDS`.

No timing oracle: a well-formed token whose key id is unknown or revoked still costs one scrypt
(with the default parameters, against a dummy salt and hash), so "no such key id" takes as long as
"wrong secret"; every digest comparison uses :func:`hmac.compare_digest`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import and_, insert, select, update

from host.store import schema as s
from host.store.db import Store, bump_revision
from host.store.errors import InvalidValue, NotFound
from host.store.user_state import disabled_error

__all__ = ["KEY_PREFIX", "LAST_USED_RESOLUTION_SECONDS", "ApiKeys", "KeyInfo", "hash_secret", "parse_token"]

KEY_PREFIX = "th_"
LAST_USED_RESOLUTION_SECONDS = 60.0
"""``last_used_at`` is updated when the stored value is older than this (seconds)."""

_TOKEN_RE = re.compile(r"^th_([0-9a-f]{12})_([A-Za-z0-9_-]{20,128})$")
_SCRYPT = (2**14, 8, 1)
_DEFAULT_KDF = "scrypt:{}:{}:{}".format(*_SCRYPT)
_DUMMY_SALT = secrets.token_bytes(16)
_DUMMY_HASH = secrets.token_bytes(32)


@dataclass(frozen=True)
class KeyInfo:
    """An API key's public metadata (never the secret).

    Attributes: key_id, user, label, created_at, last_used_at, revoked_at (UNIX seconds or None).
    """

    key_id: str
    user: str
    label: str
    created_at: float
    last_used_at: float | None = None
    revoked_at: float | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def parse_token(token: str) -> tuple[str, str] | None:
    """``(key_id, secret)`` of a well-formed token, else ``None``."""
    m = _TOKEN_RE.fullmatch(token.strip()) if isinstance(token, str) else None
    return (m.group(1), m.group(2)) if m else None


def hash_secret(secret: str, salt: bytes, kdf: str = "scrypt:16384:8:1") -> bytes:
    """The KDF digest of ``secret`` (``kdf`` is ``scrypt:N:r:p``).

    Raises:
        InvalidValue: for an unknown KDF spec.
    """
    name, _, params = kdf.partition(":")
    if name != "scrypt":
        raise InvalidValue("kdf", kdf, "only scrypt:N:r:p is supported")
    n, r, p = (int(x) for x in params.split(":"))
    return hashlib.scrypt(secret.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=128 * 1024 * 1024, dklen=32)


def _info(r) -> KeyInfo:
    return KeyInfo(r.key_id, r.user, r.label, r.created_at, r.last_used_at, r.revoked_at)


class ApiKeys:
    """Create, list, revoke and verify API keys."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._verified: dict[str, tuple[bytes, bytes]] = {}  # key_id -> (sha256(token), stored hash)

    def create(self, user: str, label: str = "") -> tuple[KeyInfo, str]:
        """Create a key for ``user``; return its info and the token (shown once, never stored).

        Raises:
            NotFound: unknown user.
            UserDisabled: the user is disabled (:mod:`host.store.user_state`).
        """
        key_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        kdf = _DEFAULT_KDF
        digest = hash_secret(secret, salt, kdf)
        now = time.time()
        with self.store.write() as conn:
            if conn.execute(select(s.users.c.name).where(s.users.c.name == user)).first() is None:
                raise NotFound("user", user)
            if (disabled := disabled_error(conn, user, "no new API key")) is not None:
                raise disabled
            conn.execute(
                insert(s.api_keys).values(
                    key_id=key_id, user=user, label=label, kdf=kdf, salt=salt, hash=digest, created_at=now
                )
            )
            bump_revision(conn)
        return KeyInfo(key_id, user, label, now), f"{KEY_PREFIX}{key_id}_{secret}"

    def list(self, user: str | None = None, *, include_revoked: bool = True) -> list[KeyInfo]:
        """Keys (of one user), oldest first. Raises NotFound for an unknown user."""
        q = select(s.api_keys).order_by(s.api_keys.c.created_at)
        if user is not None:
            q = q.where(s.api_keys.c.user == user)
        if not include_revoked:
            q = q.where(s.api_keys.c.revoked_at.is_(None))
        with self.store.read() as conn:
            if user is not None and conn.execute(select(s.users.c.name).where(s.users.c.name == user)).first() is None:
                raise NotFound("user", user)
            return [_info(r) for r in conn.execute(q)]

    def revoke(self, user: str, key_id: str | None = None) -> list[str]:
        """Revoke one key of ``user`` (or all active ones when ``key_id`` is None); return the revoked ids.

        Raises:
            NotFound: unknown user, or ``key_id`` is not an active key of that user.
        """
        now = time.time()
        with self.store.write() as conn:
            if conn.execute(select(s.users.c.name).where(s.users.c.name == user)).first() is None:
                raise NotFound("user", user)
            cond = and_(s.api_keys.c.user == user, s.api_keys.c.revoked_at.is_(None))
            if key_id is not None:
                cond = and_(cond, s.api_keys.c.key_id == key_id)
            ids = [r[0] for r in conn.execute(select(s.api_keys.c.key_id).where(cond))]
            if key_id is not None and not ids:
                raise NotFound(
                    "key", key_id, f"no active key {key_id!r} for user {user!r}; see `toolhost keys list {user}`"
                )
            if ids:
                conn.execute(update(s.api_keys).where(cond).values(revoked_at=now))
                bump_revision(conn)
        for i in ids:
            self._verified.pop(i, None)
        return ids

    def exists(self, key_id: str) -> bool:
        """Whether a key (active or revoked) with this id exists."""
        with self.store.read() as conn:
            return conn.execute(select(s.api_keys.c.key_id).where(s.api_keys.c.key_id == key_id)).first() is not None

    def verify(self, token: str) -> KeyInfo | None:
        """The active key ``token`` belongs to, or ``None`` (malformed, unknown, revoked, wrong secret).

        Updates ``last_used_at`` (see module docstring). Never raises for bad tokens.
        """
        parsed = parse_token(token)
        if parsed is None:
            return None
        key_id, secret = parsed
        with self.store.read() as conn:
            row = conn.execute(select(s.api_keys).where(s.api_keys.c.key_id == key_id)).first()
        if row is None or row.revoked_at is not None:
            self._verified.pop(key_id, None)
            # as slow as a wrong secret: the answer time must not tell which key ids exist
            hmac.compare_digest(hash_secret(secret, _DUMMY_SALT, _DEFAULT_KDF), _DUMMY_HASH)
            return None
        fast = hashlib.sha256(token.strip().encode("utf-8")).digest()
        cached = self._verified.get(key_id)
        if cached is not None and hmac.compare_digest(cached[1], row.hash) and hmac.compare_digest(cached[0], fast):
            ok = True
        else:
            ok = hmac.compare_digest(hash_secret(secret, row.salt, row.kdf), row.hash)
            if ok:
                self._verified[key_id] = (fast, row.hash)
        if not ok:
            return None
        now = time.time()
        info = _info(row)
        if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION_SECONDS:
            with self.store.write() as conn:
                conn.execute(update(s.api_keys).where(s.api_keys.c.key_id == key_id).values(last_used_at=now))
            info = KeyInfo(info.key_id, info.user, info.label, info.created_at, now, None)
        return info

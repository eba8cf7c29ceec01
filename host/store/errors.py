"""Errors of the permission store (users, roles, grants, keys, approvals, pins, audit).

    HostError
    └── StoreError               base of every store error
        ├── NotFound             an unknown user / role / key / grant / approval / pin
        ├── AlreadyExists        a duplicate user / role / grant / role membership
        ├── InvalidValue         a malformed name, risk or pattern (carries the field)
        ├── UserDisabled         a disabled user's key, key creation, approval or session
        ├── ApprovalNotPending   approve/deny on an approval that is no longer pending
        ├── PinHashMismatch      `pins accept --hash` names a definition that is no longer pending
        ├── SchemaTooNew         the database was migrated by a newer toolhost
        ├── SchemaMigrationFailed  the database is on an older schema and migrating it failed
        ├── DatabaseUnavailable  the database cannot be reached (down, wrong address, bad password)
        └── AuditUnavailable     the audit log cannot be written right now (locked, disk full, down)

Each carries the values involved and says how to fix the problem.
"""

from __future__ import annotations

import datetime

from host.errors import HostError

__all__ = [
    "AlreadyExists",
    "ApprovalNotPending",
    "AuditUnavailable",
    "DatabaseUnavailable",
    "InvalidValue",
    "NotFound",
    "PinHashMismatch",
    "SchemaMigrationFailed",
    "SchemaTooNew",
    "StoreError",
    "UserDisabled",
]


class StoreError(HostError):
    """Base class of permission-store errors."""


class NotFound(StoreError):
    """Attributes: kind (``user``, ``role``, ``key``, ``grant``, ``approval``, ``pin``), name."""

    def __init__(self, kind: str, name: str, hint: str = "") -> None:
        self.kind = kind
        self.name = name
        hint = hint or f"see `toolhost {kind}s list`"
        super().__init__(f"unknown {kind} {name!r} ({hint})")


class AlreadyExists(StoreError):
    """Attributes: kind, name."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name
        super().__init__(f"{kind} {name!r} already exists")


class InvalidValue(StoreError):
    """Attributes: field, value, problem."""

    def __init__(self, field: str, value: object, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"invalid {field} {value!r}: {problem}")


class UserDisabled(StoreError):
    """Something a disabled user holds was used: their API key, a new key for them, one of their
    approvals, their session. The message names who disabled them, since when (UTC), why, and the
    command that enables them again.

    Attributes: user, disabled_by, disabled_at (UNIX s), reason (``None``: none given), refused
    (what was refused, e.g. ``no new API key``; ``""``: the message starts with the user).
    """

    def __init__(self, user: str, disabled_by: str | None, disabled_at: float, reason: str | None = None, *,
                 refused: str = "") -> None:
        self.user = user
        self.disabled_by = disabled_by
        self.disabled_at = disabled_at
        self.reason = reason
        self.refused = refused
        since = datetime.datetime.fromtimestamp(disabled_at, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        why = f" ({reason})" if reason else ""
        head = f"{refused}: " if refused else ""
        super().__init__(
            f"{head}user {user} is disabled by {disabled_by or 'an admin'} since {since}{why}; "
            f"an admin runs `toolhost users enable {user}`"
        )


class ApprovalNotPending(StoreError):
    """Attributes: approval_id, status (the current one)."""

    def __init__(self, approval_id: str, status: str) -> None:
        self.approval_id = approval_id
        self.status = status
        super().__init__(f"approval {approval_id!r} is {status}, not pending; only pending approvals can be decided")


class PinHashMismatch(StoreError):
    """Attributes: tool, reviewed (the hash the admin gave), pending (the hash pending now)."""

    def __init__(self, tool: str, reviewed: str, pending: str) -> None:
        self.tool = tool
        self.reviewed = reviewed
        self.pending = pending
        super().__init__(
            f"the pending definition of {tool!r} is {pending[:12]}…, not the reviewed {reviewed[:12] or '(empty)'}…; "
            f"the server changed it since: run `toolhost pins diff {tool}` again and accept the hash it prints"
        )


class SchemaTooNew(StoreError):
    """Attributes: found, supported (schema versions)."""

    def __init__(self, found: int, supported: int) -> None:
        self.found = found
        self.supported = supported
        super().__init__(
            f"database schema version {found} is newer than this toolhost supports ({supported}); upgrade toolhost"
        )


class SchemaMigrationFailed(StoreError):
    """Attributes: found, supported (schema versions), reason (the database's error, one line)."""

    def __init__(self, found: int, supported: int, reason: str) -> None:
        self.found = found
        self.supported = supported
        self.reason = reason
        grant = ("give the role in the URL CREATE on the schema (as the database's owner: GRANT CREATE ON SCHEMA "
                 "public TO <role>; or create the database owned by it: createdb -O <role> <database>)")
        if found == 0:
            text = (f"the database is empty and creating toolhost's tables (schema {supported}) failed: {reason}; "
                    f"{grant}")
        else:
            text = (f"database schema version {found} is older than this toolhost ({supported}) and migrating it "
                    f"failed: {reason}; {grant}, or keep running the toolhost version that wrote it")
        super().__init__(text)


class DatabaseUnavailable(StoreError):
    """Attributes: url (password hidden), reason (the driver's error, one line)."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(
            f"cannot reach the database at {url}: {reason}; check that it runs and that --db-url "
            "(or $TOOLHOST_DATABASE_URL) names the right host, port, database, user and password"
        )


class AuditUnavailable(StoreError):
    """The audit log cannot be written right now, so a call that needs its row is not sent.

    The message is safe to show to a caller: it names the store by kind and database name only
    (never the host, the password or the driver's text) and says what to do.

    Attributes:
        store: the store, as shown (e.g. ``SQLite file toolhost.db``, ``PostgreSQL database 'toolhost'``).
        reason: a short cause: ``locked by another writer``, ``disk full``, ``read-only``,
            ``unreachable`` or ``write failed``.
        retry_after_seconds: when a retry may succeed (seconds).
    """

    def __init__(self, store: str, reason: str, retry_after_seconds: float = 5.0) -> None:
        self.store = store
        self.reason = reason
        self.retry_after_seconds = retry_after_seconds
        fix = {
            "locked by another writer": "end the other process or transaction holding the database write lock",
            "disk full": "free disk space on the volume of the data folder",
            "read-only": "make the database writable for the serve process",
            "unreachable": "start the database or restore the connection",
        }.get(reason, "check the serve log for the database error")
        super().__init__(
            f"permission store unavailable: the audit log ({store}) cannot be written ({reason}); "
            f"{fix}, then retry in {retry_after_seconds:g} s"
        )

"""The permission store: users, roles, grants, API keys, approvals, pins and the audit log.

SQLite by default (``<data_dir>/toolhost.db``, WAL), PostgreSQL (psycopg 3) for several replicas
sharing one database (see :mod:`host.store.engine`); schema
versioned by :mod:`host.store.migrations`. Open with :meth:`Store.open`, then wrap it in the
repositories below (or use :class:`host.access.AccessControl`, which holds them all).
"""

from host.store.approvals import APPROVED_TTL_SECONDS, PENDING_TTL_SECONDS, ApprovalInfo, Approvals, arguments_hash
from host.store.audit import AuditEntry, AuditLog, AuditRecord, redact, redacted_full_json, redacted_json
from host.store.db import Store
from host.store.engine import DB_FILE_NAME, default_url, normalize_url, open_engine, redact_url
from host.store.errors import (
    AlreadyExists,
    ApprovalNotPending,
    AuditUnavailable,
    DatabaseUnavailable,
    InvalidValue,
    NotFound,
    PinHashMismatch,
    SchemaMigrationFailed,
    SchemaTooNew,
    StoreError,
    UserDisabled,
)
from host.store.keys import ApiKeys, KeyInfo, parse_token
from host.store.migrations import SCHEMA_VERSION, migrate
from host.store.pins import PinInfo, PinReport, PinReview, Pins, definition_json
from host.store.user_state import UserStateChange, UserStates
from host.store.users import Grants, RoleInfo, Roles, UserInfo, Users, load_policy, parse_risk

__all__ = [
    "APPROVED_TTL_SECONDS",
    "DB_FILE_NAME",
    "PENDING_TTL_SECONDS",
    "SCHEMA_VERSION",
    "AlreadyExists",
    "ApiKeys",
    "ApprovalInfo",
    "ApprovalNotPending",
    "Approvals",
    "AuditUnavailable",
    "DatabaseUnavailable",
    "AuditEntry",
    "AuditLog",
    "AuditRecord",
    "Grants",
    "InvalidValue",
    "KeyInfo",
    "NotFound",
    "PinHashMismatch",
    "PinInfo",
    "PinReport",
    "PinReview",
    "Pins",
    "RoleInfo",
    "Roles",
    "SchemaMigrationFailed",
    "SchemaTooNew",
    "Store",
    "StoreError",
    "UserDisabled",
    "UserInfo",
    "UserStateChange",
    "UserStates",
    "Users",
    "arguments_hash",
    "default_url",
    "definition_json",
    "load_policy",
    "migrate",
    "normalize_url",
    "open_engine",
    "parse_risk",
    "parse_token",
    "redact",
    "redact_url",
    "redacted_full_json",
    "redacted_json",
]

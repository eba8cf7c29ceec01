"""Shared pieces of the admin commands: options, opening the permission store, errors, tables."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from host.access import AccessControl
    from servers.admin.protocol import AdminActions

__all__ = [
    "Admin", "AsJson", "DataDir", "DbUrl", "access", "console", "fail", "list_command", "print_json",
    "run_command", "service",
]

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="Data folder (default: $TOOLHOST_HOME or the per-user default).")
]
DbUrl = Annotated[
    str | None,
    typer.Option(
        "--db-url",
        envvar=["TOOLHOST_DATABASE_URL", "TOOLHOST_DB_URL"],
        help="Permission database URL, e.g. postgresql://user:pass@host/toolhost (default: SQLite in the data "
        "folder; also $TOOLHOST_DATABASE_URL, or the older $TOOLHOST_DB_URL).",
        show_envvar=False,
    ),
]

AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

T = TypeVar("T")


def print_json(value: object) -> None:
    """``value`` as indented JSON on stdout."""
    import json

    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


class Admin:
    """The admin actions for one command: through the running serve of the data folder when there is
    one (:class:`servers.cli.admin_remote.RemoteAdmin`), else (or once it stops answering) through
    :class:`servers.admin.AdminService` over the database, opened on first use. A third explicit
    implementation of :class:`servers.admin.protocol.AdminActions` (same methods, same arguments,
    same JSON-ready results; a test keeps the signatures equal): each method hands its action to
    :meth:`_act`, which picks the implementation. An error answer of the serve becomes one
    ``error:`` line (exit 1), like a store error on the local path. Nothing else is forwarded."""

    def __init__(self, data_dir: Path | None, db_url: str | None, *, use_serve: bool = True) -> None:
        from servers.cli.serve_client import running_serve

        self._data_dir, self._db_url = data_dir, db_url
        self._remote: AdminActions | None = None
        serve = running_serve(data_dir, db_url=db_url) if use_serve else None
        if serve is not None:
            from servers.cli.admin_remote import RemoteAdmin

            self._remote = RemoteAdmin(serve)
        self._access: AccessControl | None = None
        self._local: AdminActions | None = None

    @property
    def remote(self) -> bool:
        """Whether the running serve answers (so far)."""
        return self._remote is not None

    def local(self) -> AdminActions:
        """The service over the database (opened now if not yet)."""
        if self._local is None:
            from host.access import AccessControl  # lazy: `toolhost --help` stays instant
            from servers.admin.actions import AdminService

            self._access = AccessControl.open(self._data_dir, url=self._db_url)
            self._local = AdminService(self._access)
        return self._local

    def _act(self, action: Callable[[AdminActions], T]) -> T:
        """Run ``action`` through the serve, else (or once it stops answering) locally."""
        from servers.cli.serve_client import ServeError, ServeUnavailable

        if self._remote is not None:
            try:
                return action(self._remote)
            except ServeUnavailable:
                self._remote = None  # the serve stopped or cannot do it: do it here
            except ServeError as e:
                fail(e.message)
        return action(self.local())

    def close(self) -> None:
        if self._access is not None:
            self._access.close()
            self._access = None

    # -- the actions (servers.admin.protocol.AdminActions), each through _act
    def servers(self) -> list[dict[str, Any]]:
        return self._act(lambda a: a.servers())

    def tools(self) -> list[dict[str, Any]]:
        return self._act(lambda a: a.tools())

    def visible_tools(self, user: str | None = None) -> dict[str, Any]:
        return self._act(lambda a: a.visible_tools(user))

    def search(self, query: str, user: str | None = None, limit: int = 10) -> dict[str, Any]:
        return self._act(lambda a: a.search(query, user, limit))

    def users(self) -> list[dict[str, Any]]:
        return self._act(lambda a: a.users())

    def add_user(self, name: str) -> dict[str, Any]:
        return self._act(lambda a: a.add_user(name))

    def remove_user(self, name: str) -> None:
        self._act(lambda a: a.remove_user(name))

    def disable_user(self, name: str, reason: str | None = None) -> dict[str, Any]:
        return self._act(lambda a: a.disable_user(name, reason))

    def enable_user(self, name: str) -> dict[str, Any]:
        return self._act(lambda a: a.enable_user(name))

    def roles(self) -> list[dict[str, Any]]:
        return self._act(lambda a: a.roles())

    def add_role(self, name: str, description: str = "") -> dict[str, Any]:
        return self._act(lambda a: a.add_role(name, description))

    def remove_role(self, name: str) -> None:
        self._act(lambda a: a.remove_role(name))

    def assign_role(self, user: str, role: str) -> None:
        self._act(lambda a: a.assign_role(user, role))

    def unassign_role(self, user: str, role: str) -> None:
        self._act(lambda a: a.unassign_role(user, role))

    def keys(self, user: str | None = None) -> list[dict[str, Any]]:
        return self._act(lambda a: a.keys(user))

    def create_key(self, user: str, label: str = "") -> dict[str, Any]:
        return self._act(lambda a: a.create_key(user, label))

    def revoke_keys(self, user: str, key_id: str | None) -> list[str]:
        return self._act(lambda a: a.revoke_keys(user, key_id))

    def grants(self, subject: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        return self._act(lambda a: a.grants(subject, kind))

    def add_grant(
        self, subject: str, pattern: str, *, max_risk: str = "destructive", approval: bool | None = None,
        deny: bool = False, kind: str = "user", taint: str | None = None,
    ) -> dict[str, Any]:
        return self._act(lambda a: a.add_grant(subject, pattern, max_risk=max_risk, approval=approval, deny=deny,
                                               kind=kind, taint=taint))

    def remove_grant(self, subject: str, pattern: str, *, deny: bool = False, kind: str = "user") -> int:
        return self._act(lambda a: a.remove_grant(subject, pattern, deny=deny, kind=kind))

    def set_self_approval(
        self, subject: str, pattern: str, enable: bool, *, kind: str = "user", by: str
    ) -> dict[str, Any]:
        return self._act(lambda a: a.set_self_approval(subject, pattern, enable, kind=kind, by=by))

    def usage_stats(self) -> dict[str, Any]:
        return self._act(lambda a: a.usage_stats())

    def usage_clear(self, tool: str | None = None) -> int:
        return self._act(lambda a: a.usage_clear(tool))

    def approvals(self, status: str = "open", user: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return self._act(lambda a: a.approvals(status, user, limit))

    def approval(self, approval_id: str, reveal: bool = False) -> dict[str, Any]:
        return self._act(lambda a: a.approval(approval_id, reveal))

    def decide(
        self, approval_id: str, approve: bool, by: str, *, how: str = "admin", approver_user: str | None = None,
        reveal: bool = False,
    ) -> dict[str, Any]:
        return self._act(lambda a: a.decide(approval_id, approve, by, how=how, approver_user=approver_user,
                                            reveal=reveal))

    def pins(self, status: str | None = None, server: str | None = None) -> list[dict[str, Any]]:
        return self._act(lambda a: a.pins(status, server))

    def pin_diff(self, tool: str) -> dict[str, Any]:
        return self._act(lambda a: a.pin_diff(tool))

    def accept_pin(self, tool: str, reviewed_hash: str, by: str) -> list[dict[str, Any]]:
        return self._act(lambda a: a.accept_pin(tool, reviewed_hash, by))

    def accept_server_pins(self, server: str, by: str) -> list[dict[str, Any]]:
        return self._act(lambda a: a.accept_server_pins(server, by))

    def audit(
        self, *, user: str | None = None, tool: str | None = None, status: str | None = None,
        action: str | None = None, since: float | None = None, after_id: int | None = None, limit: int = 50,
    ) -> list[dict[str, Any]]:
        return self._act(lambda a: a.audit(user=user, tool=tool, status=status, action=action, since=since,
                                           after_id=after_id, limit=limit))

    def audit_verify(self) -> dict[str, Any]:
        return self._act(lambda a: a.audit_verify())

    def audit_rows(self, *, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        return self._act(lambda a: a.audit_rows(after_id=after_id, limit=limit))


ACTION_NAMES: tuple[str, ...] = (
    "servers", "tools", "visible_tools", "search", "users", "add_user", "remove_user", "disable_user",
    "enable_user", "roles", "add_role", "remove_role", "assign_role", "unassign_role", "keys", "create_key",
    "revoke_keys", "grants", "add_grant", "remove_grant", "set_self_approval", "usage_stats", "usage_clear",
    "approvals", "approval", "decide", "pins", "pin_diff", "accept_pin", "accept_server_pins", "audit",
    "audit_verify", "audit_rows",
)
"""The methods of :class:`servers.admin.protocol.AdminActions` (named here so the CLI does not import the
admin package at start; a test keeps the two equal)."""


@contextmanager
def service(data_dir: Path | None, db_url: str | None) -> Iterator[Admin]:
    """An :class:`Admin` for one command; a :class:`host.store.StoreError` becomes one ``error:`` line, exit 1."""
    admin = Admin(data_dir, db_url)
    try:
        yield admin
    except Exception as e:
        from host.store import StoreError

        if isinstance(e, StoreError):
            fail(str(e))
        raise
    finally:
        admin.close()


@contextmanager
def access(data_dir: Path | None, db_url: str | None) -> Iterator[AccessControl]:
    """The permission store; a :class:`host.store.StoreError` becomes one ``error:`` line, exit 1."""
    from host.access import AccessControl  # lazy: `toolhost --help` stays instant
    from host.store import StoreError

    try:
        opened = AccessControl.open(data_dir, url=db_url)
    except StoreError as e:
        fail(str(e))
    try:
        yield opened
    except StoreError as e:
        fail(str(e))
    finally:
        opened.close()


def fail(message: str) -> NoReturn:
    """Print ``error: message`` to stderr and exit with status 1."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def console() -> Console:
    """A wide console, so tables are not cut on narrow terminals."""
    return Console(width=160, soft_wrap=False)


def list_command(
    data_dir: Path | None,
    db_url: str | None,
    as_json: bool,
    fetch: Callable[[Any], list[dict[str, Any]]],
    *,
    title: str,
    columns: Sequence[str],
    cells: Callable[[dict[str, Any]], Sequence[Any]],
    empty: str,
    overflow: str = "ellipsis",
) -> None:
    """The body of a ``list`` command: the rows ``fetch(admin)`` returns (:func:`service`), printed
    as JSON (``as_json``; ``[]`` when there are none) or as a table ``title`` with ``columns`` (cut by
    ``overflow``: rich's ``ellipsis`` or ``fold``) and ``cells(row)`` per row. With no rows, only the
    sentence ``empty`` is printed (e.g. ``No pending approvals.``), never a table of bare headers."""
    with service(data_dir, db_url) as svc:
        rows = fetch(svc)
    if as_json:
        print_json(rows)
        return
    if not rows:
        typer.echo(empty)
        return
    table = Table(title=title)
    for col in columns:
        table.add_column(col, overflow=overflow)  # type: ignore[arg-type]  # one of rich's OverflowMethod names
    for row in rows:
        table.add_row(*cells(row))
    console().print(table)


def run_command(data_dir: Path | None, db_url: str | None, act: Callable[[Any], object], done: str) -> None:
    """The body of a command that changes one thing: ``act(admin)`` (:func:`service`), then ``done``."""
    with service(data_dir, db_url) as svc:
        act(svc)
    typer.echo(done)


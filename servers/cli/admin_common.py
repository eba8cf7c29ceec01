"""Shared pieces of the admin commands: options, opening the permission store, errors, tables."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from host.access import AccessControl

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


def print_json(value: object) -> None:
    """``value`` as indented JSON on stdout."""
    import json

    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


class Admin:
    """The admin actions for one command: through the running serve of the data folder when there is
    one (:class:`servers.cli.admin_remote.RemoteAdmin`), else (or once it stops answering) through
    :class:`servers.admin.AdminService` over the database, opened on first use. Every method of
    either is available here with the same arguments and JSON-ready results; an error answer of
    the serve becomes one ``error:`` line (exit 1), like a store error on the local path."""

    def __init__(self, data_dir: Path | None, db_url: str | None, *, use_serve: bool = True) -> None:
        from servers.cli.serve_client import running_serve

        self._data_dir, self._db_url = data_dir, db_url
        self._remote: object | None = None
        serve = running_serve(data_dir, db_url=db_url) if use_serve else None
        if serve is not None:
            from servers.cli.admin_remote import RemoteAdmin

            self._remote = RemoteAdmin(serve)
        self._access: AccessControl | None = None
        self._local: object | None = None

    @property
    def remote(self) -> bool:
        """Whether the running serve answers (so far)."""
        return self._remote is not None

    def local(self) -> object:
        """The service over the database (opened now if not yet)."""
        if self._local is None:
            from host.access import AccessControl  # lazy: `toolhost --help` stays instant
            from servers.admin.actions import AdminService

            self._access = AccessControl.open(self._data_dir, url=self._db_url)
            self._local = AdminService(self._access)
        return self._local

    def _act(self, name: str, args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        """Run admin action ``name`` through the serve, else (or once it stops answering) locally."""
        from servers.cli.serve_client import ServeError, ServeUnavailable

        if self._remote is not None:
            try:
                return getattr(self._remote, name)(*args, **kwargs)
            except ServeUnavailable:
                self._remote = None  # the serve stopped or cannot do it: do it here
            except ServeError as e:
                fail(e.message)
        return getattr(self.local(), name)(*args, **kwargs)

    def close(self) -> None:
        if self._access is not None:
            self._access.close()
            self._access = None


ACTION_NAMES: tuple[str, ...] = (
    "servers", "tools", "visible_tools", "search", "users", "add_user", "remove_user", "disable_user",
    "enable_user", "roles", "add_role", "remove_role", "assign_role", "unassign_role", "keys", "create_key",
    "revoke_keys", "grants", "add_grant", "remove_grant", "set_self_approval", "usage_stats", "usage_clear",
    "approvals", "approval", "decide", "pins", "pin_diff", "accept_pin", "accept_server_pins", "audit",
    "audit_verify", "audit_rows",
)
"""The methods of :class:`servers.admin.protocol.AdminActions` (named here so the CLI does not import the
admin package at start; a test keeps the two equal). :class:`Admin` has one method per name, and no other
attribute is forwarded."""


def _action(name: str) -> Callable[..., object]:
    def method(self: Admin, *args: object, **kwargs: object) -> object:
        return self._act(name, args, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``AdminActions.{name}`` through the serve or the store (see :class:`Admin`)."
    return method


for _name in ACTION_NAMES:
    setattr(Admin, _name, _action(_name))


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


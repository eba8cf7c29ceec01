"""Shared pieces of the admin commands: options, opening the permission store, errors, times."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console

if TYPE_CHECKING:
    from host.access import AccessControl

__all__ = ["AsJson", "DataDir", "DbUrl", "access", "console", "fail", "print_json", "service", "when"]

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
    import json  # noqa: PLC0415

    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


@contextmanager
def service(data_dir: Path | None, db_url: str | None) -> Iterator[object]:
    """The shared :class:`servers.admin.AdminService` over the permission store (errors as in :func:`access`)."""
    from servers.admin.actions import AdminService  # noqa: PLC0415

    with access(data_dir, db_url) as a:
        yield AdminService(a)


@contextmanager
def access(data_dir: Path | None, db_url: str | None) -> Iterator[AccessControl]:
    """The permission store; a :class:`host.store.StoreError` becomes one ``error:`` line, exit 1."""
    from host.access import AccessControl  # noqa: PLC0415 - lazy: `toolhost --help` stays instant
    from host.store import StoreError  # noqa: PLC0415

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


def when(ts: float | None) -> str:
    """A UNIX time as ``YYYY-mm-dd HH:MM:SSZ`` (``-`` for none)."""
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")

"""``toolhost store copy --to URL``: move the permission store to another (empty) database.

The usual move is from the data folder's SQLite file to PostgreSQL before running several replicas:
users, roles, keys, grants, pins, approvals, usage memory and the audit log (its hash chain
verified on the target afterwards) come along, so no key has to be re-issued and no pin is trusted
again on first use (:func:`host.store.copy.copy_store`). The source is the store the other commands
use (``--data-dir`` / ``--db-url`` / ``$TOOLHOST_DATABASE_URL``); the target must be empty. Errors
exit 1 with one ``error:`` line (passwords hidden).
"""

from __future__ import annotations

from typing import Annotated

import typer

from servers.cli.admin_common import AsJson, DataDir, DbUrl, fail, print_json

__all__ = ["store_app"]

store_app = typer.Typer(help="The permission store itself: copy it to another database.", no_args_is_help=True)


@store_app.command("copy")
def store_copy(
    to: Annotated[str, typer.Option("--to", help="Target database URL, e.g. postgresql://toolhost:PASSWORD@db/toolhost "
                                                 "(must be empty; toolhost creates its tables).")],
    data_dir: DataDir = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """Copy users, keys, grants, roles, pins, approvals and the audit log into an empty database
    (e.g. SQLite -> PostgreSQL), then verify the audit chain there."""
    from host.access import AccessControl
    from host.errors import HostError
    from host.store.copy import TargetNotEmpty, copy_store
    from host.store.db import Store
    from host.store.engine import redact_url

    try:
        source = Store.open(db_url, data_dir=data_dir)
    except HostError as e:
        fail(str(e))
    try:
        target = Store.open(to, data_dir=data_dir)
    except HostError as e:
        source.close()
        fail(f"target {redact_url(to)}: {e}")
    try:
        if str(source.engine.url) == str(target.engine.url):
            fail("the target is the store in use; give another database with --to")
        copied = copy_store(source.engine, target.engine)
    except (TargetNotEmpty, ValueError, HostError) as e:
        fail(f"copy to {redact_url(to)}: {e}")
    finally:
        source.close()
        target.close()
    access = AccessControl.open(data_dir, url=to)
    try:
        rows, broken = access.audit_log.verify()
    finally:
        access.close()
    if broken is not None:
        fail(f"copied, but the audit chain on {redact_url(to)} does not verify: {broken}")
    if as_json:
        print_json({"to": redact_url(to), "copied": copied, "audit_rows_verified": rows})
        return
    typer.echo(f"copied to {redact_url(to)}: " + ", ".join(f"{n} {t}" for t, n in copied.items() if n))
    typer.echo(f"audit chain verified on the target: {rows} rows; use it with "
               "export TOOLHOST_DATABASE_URL=... (the data folder's approvals.key stays needed)")

"""``toolhost usage stats|clear``: the usage memory of tool_search (``host.store.usage``).

The memory holds (redacted query → tool) pairs learned from searches followed by a successful
call. These commands show only counts, never the queries; ``clear`` forgets everything (or one
tool's pairs with ``--tool``). A running server picks the change up at its next memory refresh.
"""

from __future__ import annotations

from typing import Annotated

import typer

from servers.cli.admin_common import AsJson, DataDir, DbUrl, print_json, service
from servers.shared.times import when

__all__ = ["register", "usage_app"]

usage_app = typer.Typer(help="Usage memory of tool_search (queries that led to successful calls).", no_args_is_help=True)


@usage_app.command("stats")
def usage_stats(data_dir: DataDir = None, db_url: DbUrl = None, as_json: AsJson = False) -> None:
    """How many (query → tool) pairs are remembered, for how many tools (never the queries)."""
    with service(data_dir, db_url) as svc:
        st = svc.usage_stats()
    if as_json:
        print_json(st)
        return
    typer.echo(f"{st['pairs']} remembered queries for {st['tools']} tools; oldest use {when(st['oldest'])}")


@usage_app.command("clear")
def usage_clear(
    tool: Annotated[str | None, typer.Option("--tool", help="Forget only this tool's queries (qualified name).")] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Forget the remembered queries (all, or one tool's)."""
    with service(data_dir, db_url) as svc:
        n = svc.usage_clear(tool)
    typer.echo(f"forgot {n} remembered queries" + (f" of {tool}" if tool else ""))


def register(app: typer.Typer) -> None:
    """Add ``usage`` to ``app``."""
    app.add_typer(usage_app, name="usage")

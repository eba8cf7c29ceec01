"""``toolhost reconnect SERVER``: restart one upstream server of the running ``toolhost serve``.

Goes through the admin API (``POST /admin/api/servers/{name}/restart``, the same action as the
console's button) with the local admin token of the data folder; the other servers and their
calls in flight are untouched. Without a running serve there is nothing to reconnect (exit 2).
"""

from __future__ import annotations

from typing import Annotated

import typer

from servers.cli.admin_common import AsJson, DataDir, print_json

__all__ = ["reconnect_command"]


def reconnect_command(
    server: Annotated[str, typer.Argument(help="The server's name in the config (see `toolhost servers`).")],
    data_dir: DataDir = None,
    as_json: AsJson = False,
) -> None:
    """Reconnect one server of the running `toolhost serve` (e.g. after fixing what made it fail)."""
    from urllib.parse import quote

    from servers.cli.remote import post_to_serve

    answer, found = post_to_serve(data_dir, f"/servers/{quote(server, safe='')}/restart", timeout=120.0,
                                  then_get="/servers",
                                  absent="start one with `toolhost serve` (the servers connect at its start)")
    row = next((r for r in found["servers"] if r["name"] == answer["restarted"]), None)
    if as_json:
        print_json(row)
        return
    state = row.get("state_text") or row["state"] if row else "unknown"
    typer.echo(f"reconnected {server}: {state}" + (f" ({row['tools']} tools)" if row and row.get("available") else "")
               + (f"; error: {row['error']}" if row and row.get("error") else ""))
    if row and row.get("error"):
        raise typer.Exit(1)

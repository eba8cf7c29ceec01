"""``toolhost reconnect SERVER``: restart one upstream server of the running ``toolhost serve``.

Goes through the admin API (``POST /admin/api/servers/{name}/restart``, the same action as the
console's button) with the local admin token of the data folder; the other servers and their
calls in flight are untouched. Without a running serve there is nothing to reconnect (exit 2).
"""

from __future__ import annotations

from pathlib import Path
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
    from urllib.parse import quote  # noqa: PLC0415

    from servers.cli.serve_client import ServeError, ServeUnavailable, running_serve  # noqa: PLC0415

    serve = running_serve(data_dir)
    if serve is None:
        typer.echo(f"error: no toolhost serve runs on the data folder {_where(data_dir)}; start one with "
                   "`toolhost serve` (the servers connect at its start)", err=True)
        raise typer.Exit(2)
    try:
        answer = serve.request("POST", f"/servers/{quote(server, safe='')}/restart", timeout=120.0)
        rows = serve.request("GET", "/servers")["servers"]
    except ServeUnavailable as e:
        typer.echo(f"error: the running toolhost serve did not answer: {e}", err=True)
        raise typer.Exit(2) from None
    except ServeError as e:
        typer.echo(f"error: {e.message}", err=True)
        raise typer.Exit(2 if e.status == 404 else 1) from None
    row = next((r for r in rows if r["name"] == answer["restarted"]), None)
    if as_json:
        print_json(row)
        return
    state = row.get("state_text") or row["state"] if row else "unknown"
    typer.echo(f"reconnected {server}: {state}" + (f" ({row['tools']} tools)" if row and row.get("available") else "")
               + (f"; error: {row['error']}" if row and row.get("error") else ""))
    if row and row.get("error"):
        raise typer.Exit(1)


def _where(data_dir: Path | None) -> str:
    from host.paths import data_dir as resolve  # noqa: PLC0415

    return str(resolve(data_dir))

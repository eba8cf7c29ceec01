"""``toolhost audit`` (list, ``verify``, ``export``) and ``toolhost grants self-approval``.

* ``toolhost audit [--user U] ...`` lists the latest entries (as before);
* ``toolhost audit verify`` walks the hash chain (:mod:`host.store.audit_chain`) and reports the
  first broken link (exit 1), or how many rows verified;
* ``toolhost audit export [--output FILE]`` writes every row as JSON Lines (one object per row,
  the stored columns including ``prev_hash`` and ``row_hash``); ``toolhost audit verify --file
  FILE`` checks an export the same way, so a copy kept elsewhere anchors the database's chain.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from servers.cli.admin_common import AsJson, DataDir, DbUrl, console, print_json, service
from servers.cli.review_commands import FOLLOW_POLL_SECONDS, audit_table, follow_line, local_admin, parse_since

__all__ = ["audit_app", "grants_self_approval"]

audit_app = typer.Typer(help="The audit log: list, verify the hash chain, export.", invoke_without_command=True)


@audit_app.callback()
def audit_main(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option("--user")] = None,
    tool: Annotated[str | None, typer.Option("--tool")] = None,
    status: Annotated[str | None, typer.Option("--status", help="e.g. ok, unknown_tool, approval_required")] = None,
    action: Annotated[str | None, typer.Option("--action", help="call, list, search, auth, approval, pin")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only entries since 30s / 15m / 2h / 7d ago or an ISO time.")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new entries as they come (Ctrl+C to stop).")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=10_000)] = 30,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """Show the latest audit entries (arguments are stored redacted; nothing is cut here), or run a
    subcommand. With --json, one JSON array (or, with --follow, one JSON object per line)."""
    if ctx.invoked_subcommand is not None:
        return
    import time

    after = parse_since(since) if since else None
    filters = {"user": user, "tool": tool, "status": status, "action": action}
    with service(data_dir, db_url) as svc:
        rows = svc.audit(**filters, since=after, limit=limit)
        if not follow:
            if as_json:
                print_json(rows)
            elif not rows:
                typer.echo("No audit rows" + (" match these filters." if any(filters.values()) or after else "."))
            else:
                console().print(audit_table(rows))
            return
        last = max((r["id"] for r in rows), default=0)
        out = Console(soft_wrap=True, highlight=False)
        try:
            for r in reversed(rows):
                follow_line(out, r, as_json, json)
            while True:
                time.sleep(FOLLOW_POLL_SECONDS)  # the database has no change feed to wait on
                new = svc.audit(**filters, after_id=last, limit=10_000)
                for r in reversed(new):
                    follow_line(out, r, as_json, json)
                    last = max(last, r["id"])
        except KeyboardInterrupt:
            return


@audit_app.command("verify")
def audit_verify(
    file: Annotated[Path | None, typer.Option("--file", exists=True, dir_okay=False, readable=True,
                                              help="Verify this `audit export` file instead.")] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Check the audit hash chain; exit 1 at the first broken link (modified, deleted or inserted row)."""
    from host.store.audit_chain import verify_rows  # lazy: `toolhost --help` stays instant

    if file is not None:
        rows = _export_rows(file)
        count, broken = verify_rows(rows)
        where = str(file)
        message = None if broken is None else broken.message
    else:
        with service(data_dir, db_url) as svc:  # the running serve's view (its queued rows written), else the DB
            checked = svc.audit_verify()
        count, message = checked["rows"], checked["broken"] and checked["broken"]["message"]
        where = "the audit log"
    if message is not None:
        typer.echo(f"BROKEN: {message} ({count} rows before it verified) in {where}", err=True)
        raise typer.Exit(1)
    typer.echo(f"ok: {count} rows of {where} verified, the hash chain is intact")


@audit_app.command("export")
def audit_export(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Write every audit row as JSON Lines (oldest first); `audit verify --file` checks the export.

    Through the running serve of the data folder when there is one (its queued rows written first),
    else from the database."""
    with service(data_dir, db_url) as svc:
        if output is None:
            for row in _all_rows(svc):
                sys.stdout.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            return
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        count = 0
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for row in _all_rows(svc):
                f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
                count += 1
    typer.echo(f"exported {count} audit rows to {output}", err=True)


def grants_self_approval(
    subject: Annotated[str, typer.Argument(help="User (or role with --role) holding the allow grant.")],
    pattern: Annotated[str, typer.Argument(help="The grant's pattern, exactly as `grants list` shows it.")],
    enable: Annotated[bool, typer.Option("--enable/--disable", help="Allow or stop self-approval.")] = True,
    role: Annotated[bool, typer.Option("--role", help="SUBJECT is a role.")] = False,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Let the callers of one allow grant approve their own calls through their client's prompt
    (MCP elicitation). Off by default: for single-user desktops only; each such decision is
    audited as self-approval."""
    kind = "role" if role else "user"
    with service(data_dir, db_url) as svc:
        svc.set_self_approval(subject, pattern, enable, kind=kind, by=local_admin())
    state = "may now approve their own calls" if enable else "can no longer approve their own calls"
    typer.echo(f"{kind} {subject}: callers of grant {pattern} {state}")


def _export_rows(file: Path) -> list[dict[str, Any]]:
    """The rows of an ``audit export`` file; a line that is not a JSON object is a usage error naming
    ``--file``, the line and the fix (exit 2)."""
    rows = []
    try:
        with file.open(encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as e:
                    raise typer.BadParameter(f"{file}: line {number} is not JSON ({e}); pass a file written by "
                                             "`toolhost audit export`", param_hint="'--file'") from None
                if not isinstance(row, dict):
                    raise typer.BadParameter(f"{file}: line {number} is not a JSON object; pass a file written by "
                                             "`toolhost audit export`", param_hint="'--file'")
                rows.append(row)
    except (OSError, UnicodeDecodeError) as e:
        raise typer.BadParameter(f"cannot read {file}: {(e.strerror if isinstance(e, OSError) else None) or e}",
                                 param_hint="'--file'") from None
    return rows


def _all_rows(svc: Any, page: int = 1000) -> Iterator[dict[str, Any]]:
    """Every stored audit row, oldest first, ``page`` rows per request."""
    after = 0
    while True:
        rows = svc.audit_rows(after_id=after, limit=page)
        yield from rows
        if len(rows) < page:
            return
        after = rows[-1]["id"]

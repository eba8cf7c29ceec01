"""``toolhost approvals|pins|audit``: reviewing what waits for a human, pinned definitions, the audit log.

``approvals show ID`` prints a request's complete arguments (secrets masked) before anyone
approves it; ``pins accept TOOL --hash HASH`` pins only the definition ``pins diff TOOL`` showed.
Options and errors as in :mod:`servers.admin_cli`.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from host.access import APPROVER_ROLE, decide
from servers.admin_common import DataDir, DbUrl, access, console, fail, when
from servers.identity import local_principal_name

__all__ = ["approvals_app", "audit_command", "pins_app"]

approvals_app = typer.Typer(help="Calls waiting for a human's approval.", no_args_is_help=True)
pins_app = typer.Typer(help="Pinned tool definitions (changed tools are held until accepted).", no_args_is_help=True)




# -- approvals ----------------------------------------------------------------------------------
@approvals_app.command("list")
def approvals_list(
    status: Annotated[
        str, typer.Option("--status", help="open (default), pending, approved, denied, used, expired, all")
    ] = "open",
    user: Annotated[str | None, typer.Option("--user")] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """List approval requests (newest first)."""
    with access(data_dir, db_url) as a:
        rows = a.approvals.list(status=None if status == "all" else status, user=user)
    table = Table(title="approvals")
    for col in ("id", "user", "tool", "status", "arguments", "requested", "expires"):
        table.add_column(col, overflow="fold")  # fold, never ellipsize: the "see approvals show" hint must stay
    for r in rows:
        table.add_row(r.id, r.user, r.tool, r.status, _preview(r), when(r.created_at), when(r.expires_at))
    console().print(table)


PREVIEW_CHARS = 60
"""Characters of the arguments shown per row by ``approvals list`` (``approvals show`` shows all)."""


def _preview(r) -> Text:
    text = _printable(r.arguments_redacted)
    if len(text) <= PREVIEW_CHARS:
        return Text(text)
    return Text(text[:PREVIEW_CHARS] + f"…(see approvals show {r.id})")


def _printable(text: str) -> str:
    """``text`` with control, format (bidi overrides, zero-width) and separator characters written as
    ``\\uXXXX``: inside JSON strings that is the same value, and nothing can hide or reorder the rest
    of the arguments on a terminal."""
    out = []
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp") and ch != "\n":
            out.append("".join(f"\\u{u:04x}" for u in _utf16(ch)))
        else:
            out.append(ch)
    return "".join(out)


def _utf16(ch: str) -> list[int]:
    data = ch.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


@approvals_app.command("show")
def approvals_show(approval_id: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Show one approval with its complete arguments (secrets masked, nothing cut): review them before approving."""
    with access(data_dir, db_url) as a:
        r = a.approvals.get(approval_id)
    out = Console(soft_wrap=True, highlight=False)  # soft wrap: rich never cuts or folds a line
    for label, value in (
        ("approval", r.id),
        ("status", r.status),
        ("user", r.user + (f" (key {r.key_id})" if r.key_id else "")),
        ("tool", r.tool),
        ("rule", r.rule or "-"),
        ("requested", when(r.created_at)),
        ("expires", when(r.expires_at)),
        ("decided", f"{when(r.decided_at)} by {r.decided_by}" if r.decided_by else "-"),
        ("used", when(r.used_at)),
        ("arguments sha256", r.arguments_hash),
    ):
        out.print(Text(f"{label}: {value}"))
    try:
        pretty = json.dumps(json.loads(r.arguments_redacted), indent=2, ensure_ascii=False, sort_keys=True)
    except ValueError:
        pretty = r.arguments_redacted
    out.print(Text(f"arguments ({len(r.arguments_redacted)} characters, complete; secrets masked):"))
    out.print(Text(_printable(pretty)))


@approvals_app.command("approve")
def approvals_approve(
    approval_id: str,
    as_user: Annotated[
        str | None, typer.Option("--as", help=f"Decide as this user (must hold the '{APPROVER_ROLE}' role).")
    ] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Approve a pending call: the same call may then run once before the approval expires."""
    with access(data_dir, db_url) as a:
        info = decide(a, approval_id, approve=True, by=as_user or local_principal_name(), how="cli",
                      approver_user=as_user)
    typer.echo(f"approved {approval_id}: {info.user} may run {info.tool} once until {when(info.expires_at)}")


@approvals_app.command("deny")
def approvals_deny(
    approval_id: str,
    as_user: Annotated[
        str | None, typer.Option("--as", help=f"Decide as this user (must hold the '{APPROVER_ROLE}' role).")
    ] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Deny a pending call."""
    with access(data_dir, db_url) as a:
        info = decide(a, approval_id, approve=False, by=as_user or local_principal_name(), how="cli",
                      approver_user=as_user)
    typer.echo(f"denied {approval_id} ({info.user} → {info.tool})")


# -- pins ---------------------------------------------------------------------------------------
@pins_app.command("list")
def pins_list(
    status: Annotated[str | None, typer.Option("--status", help="trusted, changed or held")] = None,
    server: Annotated[str | None, typer.Option("--server")] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """List pinned tool definitions."""
    with access(data_dir, db_url) as a:
        rows = a.pins.list(status=status, server=server)
    table = Table(title="pins")
    for col in ("tool", "server", "status", "pinned hash", "served hash", "updated"):
        table.add_column(col)
    for p in rows:
        table.add_row(
            p.tool,
            p.server,
            p.status,
            (p.definition_hash or "-")[:12],
            (p.pending_hash or "-")[:12],
            when(p.updated_at),
        )
    console().print(table)


@pins_app.command("diff")
def pins_diff(tool: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Show what changed between the pinned and the served definition of TOOL, and its hash."""
    with access(data_dir, db_url) as a:
        review = a.pins.review(tool)
    if review.pending_hash is None:
        typer.echo(f"{tool}: no pending change")
        return
    typer.echo(review.diff, nl=False)
    typer.echo(f"pending definition hash: {review.pending_hash}")
    typer.echo(f"accept exactly this definition with: toolhost pins accept {tool} --hash {review.pending_hash}")


@pins_app.command("accept")
def pins_accept(
    tool: Annotated[str | None, typer.Argument(help="Qualified tool name; omit with --server.")] = None,
    reviewed_hash: Annotated[
        str | None, typer.Option("--hash", help="The pending definition hash printed by `pins diff TOOL`.")
    ] = None,
    server: Annotated[str | None, typer.Option("--server", help="Accept every changed/held tool of SERVER.")] = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="With --server: accept definitions without reviewing each.")
    ] = False,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Accept the served definition of TOOL (the one `pins diff` showed, named by --hash), or of all
    held/changed tools of --server (with --yes): it becomes the pin."""
    if (tool is None) == (server is None):
        fail("give exactly one of TOOL (with --hash) or --server SERVER (with --yes)")
    if tool is not None and not reviewed_hash:
        fail(f"review the change first: run `toolhost pins diff {tool}` and pass the hash it prints with --hash")
    if server is not None and not yes:
        fail(
            f"--server {server} accepts every pending definition of {server} unreviewed; review each with "
            "`toolhost pins diff TOOL`, or pass --yes to accept them all"
        )
    with access(data_dir, db_url) as a:
        if tool is not None:
            pin = a.pins.accept(tool, reviewed_hash or "")
            accepted = [(pin.tool, pin.definition_hash or "")]
        else:
            accepted = a.pins.accept_server(server or "")
        for name, h in accepted:
            a.audit(action="pin", tool=name, decision="allow", status="accepted", detail=f"definition {h}")
    typer.echo(f"accepted {len(accepted)} definition(s):")
    for name, h in accepted:
        typer.echo(f"  {name} {h}")


# -- audit --------------------------------------------------------------------------------------
def audit_command(
    user: Annotated[str | None, typer.Option("--user")] = None,
    tool: Annotated[str | None, typer.Option("--tool")] = None,
    status: Annotated[str | None, typer.Option("--status", help="e.g. ok, unknown_tool, approval_required")] = None,
    action: Annotated[str | None, typer.Option("--action", help="call, list, search, auth, approval, pin")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=10_000)] = 30,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Show the latest audit entries (arguments are stored redacted)."""
    with access(data_dir, db_url) as a:
        rows = a.audit_log.query(user=user, tool=tool, status=status, action=action, limit=limit)
    table = Table(title="audit (newest first)")
    for col in ("time", "user", "key", "action", "tool", "decision", "rule", "status", "ms", "arguments"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            when(r.at),
            r.user or "-",
            r.key_id or "-",
            r.action,
            r.tool or "-",
            r.decision or "-",
            r.rule or "-",
            (r.status or "-") + (f" (by {r.approver})" if r.approver and r.action == "call" else ""),
            "-" if r.duration_ms is None else f"{r.duration_ms:.1f}",
            (r.arguments or "-")[:50],
        )
    console().print(table)

"""``toolhost approvals|pins|audit``: reviewing what waits for a human, pinned definitions, the audit log.

``approvals show ID`` prints a request's exact arguments (nothing masked; a value too long to show
is hidden with its length and sha256 until ``--reveal``) before anyone approves it; ``pins accept TOOL
--hash HASH`` pins only the definition ``pins diff TOOL`` showed.
Options and errors as in :mod:`servers.cli.admin_commands`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from servers.admin.approval_view import arguments_state, printable
from servers.cli.admin_common import AsJson, DataDir, DbUrl, fail, list_command, print_json, service
from servers.shared.times import when

__all__ = [
    "FOLLOW_POLL_SECONDS", "approvals_app", "audit_table", "follow_line", "local_admin", "parse_since", "pins_app",
    "printable",
]

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
    as_json: AsJson = False,
) -> None:
    """List approval requests (newest first)."""
    list_command(data_dir, db_url, as_json, lambda svc: svc.approvals(status, user), title="approvals",
                 columns=("id", "user", "tool", "status", "arguments", "requested", "expires"),
                 cells=lambda r: (r["id"], r["user"], r["tool"], r["status"], _preview(r), when(r["created_at"]),
                                  when(r["expires_at"])),
                 empty=_no_approvals(status, user),
                 overflow="fold")  # fold, never ellipsize: the "see approvals show" hint must stay


def _no_approvals(status: str, user: str | None) -> str:
    """The sentence an empty ``approvals list`` prints: ``No pending approvals.``, ``No denied approvals for bob.``"""
    kind = {"open": "pending", "all": ""}.get(status, status)
    return f"No {kind + ' ' if kind else ''}approvals{f' for {user}' if user else ''}."


PREVIEW_CHARS = 60
"""Characters of the arguments shown per row by ``approvals list`` (``approvals show`` shows all)."""


def _preview(r: dict) -> Text:
    text = printable(_compact(r["arguments"]))
    mark = "" if r["complete"] else (" [redacted copy]" if r["source"] == "redacted" else " [parts hidden]")
    if len(text) <= PREVIEW_CHARS:
        return Text(text + mark)
    return Text(text[:PREVIEW_CHARS] + f"…{mark} (see approvals show {r['id']})")


def _compact(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True,
                                                           separators=(",", ":"))


Reveal = Annotated[bool, typer.Option("--reveal", help="Show (approve: confirm you saw) argument values too long "
                                                      "to show by default.")]


@approvals_app.command("show")
def approvals_show(approval_id: str, reveal: Reveal = False, data_dir: DataDir = None, db_url: DbUrl = None,
                   as_json: AsJson = False) -> None:
    """Show one approval with the call's exact arguments (what the tool receives; values over 2000
    characters are hidden with their length and sha256 unless --reveal): review them before approving."""
    with service(data_dir, db_url) as svc:
        r = svc.approval(approval_id, reveal)
    if as_json:
        print_json(r)
        return
    out = Console(soft_wrap=True, highlight=False)  # soft wrap: rich never cuts or folds a line
    for label, value in (
        ("approval", r["id"]),
        ("status", r["status"]),
        ("user", r["user"] + (f" (key {r['key_id']})" if r["key_id"] else "")),
        ("tool", r["tool"]),
        ("rule", r["rule"] or "-"),
        ("requested", when(r["created_at"])),
        ("expires", when(r["expires_at"])),
        ("decided", f"{when(r['decided_at'])} by {r['decided_by']}" if r["decided_by"] else "-"),
        ("used", when(r["used_at"])),
        ("arguments sha256", r["arguments_hash"]),
    ):
        out.print(Text(f"{label}: {value}"))
    args = r["arguments"]
    pretty = args if isinstance(args, str) else json.dumps(args, indent=2, ensure_ascii=False, sort_keys=True)
    out.print(Text(f"arguments ({arguments_state(r)}):"))
    out.print(Text(printable(pretty)))
    for h in r["hidden"]:
        out.print(Text(f"hidden: {h['path']}: {h['length']} characters, sha256 {h['sha256']}"))


APPROVER_ROLE = "approver"
"""host.access.APPROVER_ROLE, spelled here so `toolhost --help` imports no store (a test keeps them equal)."""

AsUser = Annotated[
    str | None, typer.Option("--as", help=f"Decide as this user (must hold the '{APPROVER_ROLE}' role).")
]


def local_admin(as_user: str | None = None) -> str:
    """Who the local admin's decision is recorded as: ``local:<os user>``, or ``local:<os user> as
    carol`` with ``--as carol`` (as ``call --user`` records ``root as bob``: both people are named)."""
    from registry.policy import Principal
    from servers.shared.local_principal import local_principal_name  # lazy: imports the store

    local = local_principal_name()
    return Principal(user=as_user, actor=local).recorded if as_user else local


def _decide(approval_id: str, approve: bool, as_user: str | None, data_dir, db_url, as_json: bool,
            done: Callable[[dict], str], reveal: bool = False) -> None:
    """One CLI decision through the shared admin service (the local admin unless ``--as``), printed
    as JSON or as ``done(decided approval)``."""
    with service(data_dir, db_url) as svc:
        info = svc.decide(approval_id, approve, local_admin(as_user), how="cli", approver_user=as_user,
                          reveal=reveal)
    if as_json:
        print_json(info)
        return
    typer.echo(done(info))


@approvals_app.command("approve")
def approvals_approve(
    approval_id: str, as_user: AsUser = None, reveal: Reveal = False, data_dir: DataDir = None, db_url: DbUrl = None,
    as_json: AsJson = False
) -> None:
    """Approve a pending call: the same call may then run once before the approval expires (--reveal when
    `approvals show` hid values too long to show)."""
    _decide(approval_id, True, as_user, data_dir, db_url, as_json,
            lambda info: f"approved {approval_id}: {info['user']} may run {info['tool']} once until "
            f"{when(info['expires_at'])}", reveal=reveal)


@approvals_app.command("deny")
def approvals_deny(
    approval_id: str, as_user: AsUser = None, data_dir: DataDir = None, db_url: DbUrl = None, as_json: AsJson = False
) -> None:
    """Deny a pending call."""
    _decide(approval_id, False, as_user, data_dir, db_url, as_json,
            lambda info: f"denied {approval_id} ({info['user']} → {info['tool']})")


# -- pins ---------------------------------------------------------------------------------------
@pins_app.command("list")
def pins_list(
    status: Annotated[str | None, typer.Option("--status", help="trusted, changed or held")] = None,
    server: Annotated[str | None, typer.Option("--server")] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """List pinned tool definitions."""
    list_command(data_dir, db_url, as_json, lambda svc: svc.pins(status, server), title="pins",
                 columns=("tool", "server", "status", "pinned hash", "served hash", "updated"),
                 cells=lambda p: (p["tool"], p["server"], p["status"], (p["definition_hash"] or "-")[:12],
                                  (p["pending_hash"] or "-")[:12], when(p["updated_at"])),
                 empty="No pins" + (f" with status {status}" if status else "")
                 + (f" of server {server}" if server else "")
                 + ": tools are pinned when `toolhost serve` first lists them.")


@pins_app.command("diff")
def pins_diff(tool: str, data_dir: DataDir = None, db_url: DbUrl = None, as_json: AsJson = False) -> None:
    """Show what changed between the pinned and the served definition of TOOL, and its hash."""
    with service(data_dir, db_url) as svc:
        review = svc.pin_diff(tool)
    if as_json:
        print_json(review)
        return
    pending = review["pending_hash"]
    if pending is None:
        typer.echo(f"{tool}: no pending change")
        return
    typer.echo(review["diff"], nl=False)
    drift = review.get("drift")
    if drift:
        never = " (never auto-accepted)" if drift["risk_downgrade"] or drift["poisoning"] else ""
        typer.echo(f"drift class: {drift['label']}{never}")
        for line in drift["reasons"]:
            typer.echo(f"  {line}")
    findings = review.get("findings") or []
    if findings:
        typer.echo(f"held by the definition scanner: {len(findings)} finding(s)")
        for line in findings:
            typer.echo(f"  {line}")
    typer.echo(f"pending definition hash: {pending}")
    typer.echo(f"accept exactly this definition with: toolhost pins accept {tool} --hash {pending}")


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
    as_json: AsJson = False,
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
    with service(data_dir, db_url) as svc:
        if tool is not None:
            done = svc.accept_pin(tool, reviewed_hash or "", local_admin())
        else:
            done = svc.accept_server_pins(server or "", local_admin())
    if as_json:
        print_json(done)
        return
    typer.echo(f"accepted {len(done)} definition(s):")
    for row in done:
        typer.echo(f"  {row['tool']} {row['definition_hash']}")


# -- audit --------------------------------------------------------------------------------------
FOLLOW_POLL_SECONDS = 1.0


def parse_since(text: str, option: str = "--since") -> float:
    """``30s``, ``15m``, ``2h``, ``7d`` ago, or an ISO time (``2026-11-30T10:00:00Z``), as UNIX seconds.

    Raises:
        typer.BadParameter: anything else (names ``option`` and the accepted forms).
    """
    import datetime as dt
    import re
    import time

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if m:
        return time.time() - float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    try:
        at = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(f"{text!r}: use a duration like 30s, 15m, 2h, 7d or an ISO time "
                                 "like 2026-11-30T10:00:00Z", param_hint=f"'{option}'") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    return at.timestamp()


def audit_table(rows: list[dict]) -> Table:
    table = Table(title="audit (newest first)")
    for col in ("id", "time", "user", "key", "action", "tool", "decision", "rule", "status", "ms", "arguments"):
        table.add_column(col, overflow="fold")  # fold, never cut: arguments and rules are read in full
    for r in rows:
        table.add_row(
            str(r["id"]), when(r["at"]), r["user"] or "-", r["key_id"] or "-", r["action"], r["tool"] or "-",
            r["decision"] or "-", r["rule"] or "-",
            (r["status"] or "-") + (f" (by {r['approver']})" if r.get("approver") and r["action"] == "call" else ""),
            "-" if r["duration_ms"] is None else f"{r['duration_ms']:.1f}",
            Text(printable(r["arguments"] or r["detail"] or "-")),
        )
    return table


def follow_line(out: Console, r: dict, as_json: bool, json_mod) -> None:
    if as_json:
        typer.echo(json_mod.dumps(r, ensure_ascii=False, default=str))
        return
    ms = "" if r["duration_ms"] is None else f" {r['duration_ms']:.1f}ms"
    out.print(Text(f"{when(r['at'])} #{r['id']} {r['user'] or '-'} {r['action']} {r['tool'] or '-'} "
                   f"{r['decision'] or '-'} {r['status'] or '-'}{ms} rule={r['rule'] or '-'} "
                   f"{printable(r['arguments'] or r['detail'] or '')}"))

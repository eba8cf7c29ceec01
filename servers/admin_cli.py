"""``toolhost users|roles|keys|grants|approvals|pins|audit``: administering per-user permissions.

Every command takes ``--data-dir`` (else ``$TOOLHOST_HOME``, else the per-user default; see
:mod:`host.paths`) and ``--db-url`` (else ``$TOOLHOST_DB_URL``, else ``<data_dir>/toolhost.db``).
Errors (unknown user, bad pattern, duplicate, ...) print one ``error:`` line naming the fix and
exit with status 1. API keys are printed once, at creation; only their hash is stored.
``approvals show ID`` prints a request's complete arguments (secrets masked) before anyone approves
it; ``pins accept TOOL --hash HASH`` pins only the definition ``pins diff TOOL`` showed.

Wire into the main app with :func:`register`.
"""

from __future__ import annotations

import datetime as dt
import json
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from host.access import AccessControl
from host.store import StoreError
from registry.permissions import Grant

__all__ = ["register"]

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="Data folder (default: $TOOLHOST_HOME or the per-user default).")
]
DbUrl = Annotated[
    str | None,
    typer.Option("--db-url", envvar="TOOLHOST_DB_URL", help="SQLAlchemy URL (default: SQLite in the data folder)."),
]
MaxRisk = Annotated[str, typer.Option("--max-risk", help="Highest risk covered: read, write or destructive.")]
ApprovalOpt = Annotated[
    bool | None,
    typer.Option(
        "--approval/--no-approval",
        help="Always / never ask a human before calls (default: ask for destructive tools only).",
    ),
]
DenyOpt = Annotated[bool, typer.Option("--deny", help="A deny grant (deny wins over every allow).")]

users_app = typer.Typer(help="Users who may connect to the registry server.", no_args_is_help=True)
roles_app = typer.Typer(help="Roles: named sets of grants given to users.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys (bearer tokens for the HTTP server).", no_args_is_help=True)
grants_app = typer.Typer(help="Grants: which tools a user may see and call.", no_args_is_help=True)
approvals_app = typer.Typer(help="Calls waiting for a human's approval.", no_args_is_help=True)
pins_app = typer.Typer(help="Pinned tool definitions (changed tools are held until accepted).", no_args_is_help=True)


@contextmanager
def _access(data_dir: Path | None, db_url: str | None) -> Iterator[AccessControl]:
    try:
        access = AccessControl.open(data_dir, url=db_url)
    except StoreError as e:
        _fail(str(e))
    try:
        yield access
    except StoreError as e:
        _fail(str(e))
    finally:
        access.close()


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _console() -> Console:
    return Console(width=160, soft_wrap=False)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _approval_text(g: Grant) -> str:
    return "default (destructive)" if g.approval is None else ("always" if g.approval else "never")


def _grants_table(grants: list[Grant], title: str) -> Table:
    table = Table(title=title)
    for col in ("id", "subject", "effect", "pattern", "max risk", "approval"):
        table.add_column(col)
    for g in grants:
        table.add_row(str(g.id), g.source, g.effect.value, g.pattern, g.max_risk.value, _approval_text(g))
    return table


# -- users --------------------------------------------------------------------------------------
@users_app.command("add")
def users_add(name: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Create user NAME (no access until grants or roles are added)."""
    with _access(data_dir, db_url) as a:
        a.users.add(name)
    typer.echo(f"added user {name}; next: toolhost grants add {name} PATTERN, toolhost keys create {name}")


@users_app.command("list")
def users_list(data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """List users with their roles, grant and active key counts."""
    with _access(data_dir, db_url) as a:
        rows = a.users.list()
    table = Table(title="users")
    for col in ("user", "roles", "grants", "active keys", "created"):
        table.add_column(col)
    for u in rows:
        table.add_row(u.name, ", ".join(u.roles) or "-", str(u.grants), str(u.active_keys), _when(u.created_at))
    _console().print(table)


@users_app.command("remove")
def users_remove(name: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Delete user NAME with its grants, role memberships, API keys and approvals."""
    with _access(data_dir, db_url) as a:
        a.users.remove(name)
    typer.echo(f"removed user {name}")


# -- roles --------------------------------------------------------------------------------------
@roles_app.command("add")
def roles_add(
    name: str,
    description: Annotated[str, typer.Option("--description", "-d")] = "",
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Create role NAME."""
    with _access(data_dir, db_url) as a:
        a.roles.add(name, description)
    typer.echo(f"added role {name}")


@roles_app.command("list")
def roles_list(data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """List roles with members and grant counts."""
    with _access(data_dir, db_url) as a:
        rows = a.roles.list()
    table = Table(title="roles")
    for col in ("role", "members", "grants", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(r.name, ", ".join(r.members) or "-", str(r.grants), r.description)
    _console().print(table)


@roles_app.command("remove")
def roles_remove(name: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Delete role NAME, its grants and memberships."""
    with _access(data_dir, db_url) as a:
        a.roles.remove(name)
    typer.echo(f"removed role {name}")


@roles_app.command("assign")
def roles_assign(role: str, user: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Give USER the role ROLE."""
    with _access(data_dir, db_url) as a:
        a.users.assign_role(user, role)
    typer.echo(f"user {user} now has role {role}")


@roles_app.command("unassign")
def roles_unassign(role: str, user: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Take role ROLE from USER."""
    with _access(data_dir, db_url) as a:
        a.users.unassign_role(user, role)
    typer.echo(f"user {user} no longer has role {role}")


@roles_app.command("grant")
def roles_grant(
    role: str,
    pattern: str,
    max_risk: MaxRisk = "destructive",
    approval: ApprovalOpt = None,
    deny: DenyOpt = False,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Add a grant to ROLE (PATTERN: server:NAME or a glob like orders__*)."""
    with _access(data_dir, db_url) as a:
        g = a.grants.add(
            role, pattern, effect="deny" if deny else "allow", max_risk=max_risk, approval=approval, kind="role"
        )
    typer.echo(f"added grant #{g.id} {g.rule}")


@roles_app.command("revoke")
def roles_revoke(
    role: str, pattern: str, deny: DenyOpt = False, data_dir: DataDir = None, db_url: DbUrl = None
) -> None:
    """Remove ROLE's grant(s) with PATTERN (allow grants; --deny for deny grants)."""
    with _access(data_dir, db_url) as a:
        a.grants.remove(role, pattern, effect="deny" if deny else "allow", kind="role")
    typer.echo(f"removed grant {pattern} from role {role}")


# -- grants -------------------------------------------------------------------------------------
@grants_app.command("add")
def grants_add(
    user: str,
    pattern: str,
    max_risk: MaxRisk = "destructive",
    approval: ApprovalOpt = None,
    deny: DenyOpt = False,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Grant USER the tools matching PATTERN (server:NAME, or a glob such as orders__* or git__git_status)."""
    with _access(data_dir, db_url) as a:
        g = a.grants.add(user, pattern, effect="deny" if deny else "allow", max_risk=max_risk, approval=approval)
    typer.echo(f"added grant #{g.id} {g.rule}")


@grants_app.command("list")
def grants_list(
    user: Annotated[str | None, typer.Argument(help="Only this user's own grants.")] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """List grants (all, or USER's own; role grants are listed under role:NAME)."""
    with _access(data_dir, db_url) as a:
        grants = a.grants.list(user, kind="user" if user else None)
    _console().print(_grants_table(grants, f"grants of {user}" if user else "grants"))


@grants_app.command("remove")
def grants_remove(
    user: str, pattern: str, deny: DenyOpt = False, data_dir: DataDir = None, db_url: DbUrl = None
) -> None:
    """Remove USER's grant with PATTERN (allow grants; --deny for deny grants)."""
    with _access(data_dir, db_url) as a:
        a.grants.remove(user, pattern, effect="deny" if deny else "allow")
    typer.echo(f"removed grant {pattern} from user {user}")


# -- keys ---------------------------------------------------------------------------------------
@keys_app.command("create")
def keys_create(
    user: str,
    label: Annotated[str, typer.Option("--label", help="A note, e.g. where the key is used.")] = "",
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Create an API key for USER and print it once (only its hash is stored)."""
    with _access(data_dir, db_url) as a:
        info, token = a.keys.create(user, label)
    typer.echo(f"created key {info.key_id} for {user}. It is shown only now; store it safely:")
    typer.echo(token)


@keys_app.command("list")
def keys_list(
    user: Annotated[str | None, typer.Argument()] = None, data_dir: DataDir = None, db_url: DbUrl = None
) -> None:
    """List API keys (never the secrets)."""
    with _access(data_dir, db_url) as a:
        keys = a.keys.list(user)
    table = Table(title=f"API keys of {user}" if user else "API keys")
    for col in ("key id", "user", "label", "created", "last used", "status"):
        table.add_column(col)
    for k in keys:
        status = "active" if k.active else f"revoked {_when(k.revoked_at)}"
        table.add_row(k.key_id, k.user, k.label or "-", _when(k.created_at), _when(k.last_used_at), status)
    _console().print(table)


@keys_app.command("revoke")
def keys_revoke(
    user: str,
    key_id: Annotated[str | None, typer.Argument(help="The key id (see keys list); omit with --all.")] = None,
    all_keys: Annotated[bool, typer.Option("--all", help="Revoke every active key of USER.")] = False,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Revoke one API key of USER (or all with --all); takes effect on the next request."""
    if key_id is None and not all_keys:
        _fail("give a KEY_ID (see `toolhost keys list USER`) or --all")
    with _access(data_dir, db_url) as a:
        ids = a.keys.revoke(user, None if all_keys else key_id)
    typer.echo(f"revoked {len(ids)} key(s) of {user}: {', '.join(ids) or '-'}")


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
    with _access(data_dir, db_url) as a:
        rows = a.approvals.list(status=None if status == "all" else status, user=user)
    table = Table(title="approvals")
    for col in ("id", "user", "tool", "status", "arguments", "requested", "expires"):
        table.add_column(col, overflow="fold")  # fold, never ellipsize: the "see approvals show" hint must stay
    for r in rows:
        table.add_row(r.id, r.user, r.tool, r.status, _preview(r), _when(r.created_at), _when(r.expires_at))
    _console().print(table)


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
    with _access(data_dir, db_url) as a:
        r = a.approvals.get(approval_id)
    console = Console(soft_wrap=True, highlight=False)  # soft wrap: rich never cuts or folds a line
    for label, value in (
        ("approval", r.id),
        ("status", r.status),
        ("user", r.user + (f" (key {r.key_id})" if r.key_id else "")),
        ("tool", r.tool),
        ("rule", r.rule or "-"),
        ("requested", _when(r.created_at)),
        ("expires", _when(r.expires_at)),
        ("decided", f"{_when(r.decided_at)} by {r.decided_by}" if r.decided_by else "-"),
        ("used", _when(r.used_at)),
        ("arguments sha256", r.arguments_hash),
    ):
        console.print(Text(f"{label}: {value}"))
    try:
        pretty = json.dumps(json.loads(r.arguments_redacted), indent=2, ensure_ascii=False, sort_keys=True)
    except ValueError:
        pretty = r.arguments_redacted
    console.print(Text(f"arguments ({len(r.arguments_redacted)} characters, complete; secrets masked):"))
    console.print(Text(_printable(pretty)))


@approvals_app.command("approve")
def approvals_approve(approval_id: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Approve a pending call: the same call may then run once before the approval expires."""
    with _access(data_dir, db_url) as a:
        info = a.approvals.approve(approval_id, by="cli")
        a.audit(action="approval", tool=info.tool, decision="allow", status="approved", detail=approval_id)
    typer.echo(f"approved {approval_id}: {info.user} may run {info.tool} once until {_when(info.expires_at)}")


@approvals_app.command("deny")
def approvals_deny(approval_id: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Deny a pending call."""
    with _access(data_dir, db_url) as a:
        info = a.approvals.deny(approval_id, by="cli")
        a.audit(action="approval", tool=info.tool, decision="deny", status="denied", detail=approval_id)
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
    with _access(data_dir, db_url) as a:
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
            _when(p.updated_at),
        )
    _console().print(table)


@pins_app.command("diff")
def pins_diff(tool: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Show what changed between the pinned and the served definition of TOOL, and its hash."""
    with _access(data_dir, db_url) as a:
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
        _fail("give exactly one of TOOL (with --hash) or --server SERVER (with --yes)")
    if tool is not None and not reviewed_hash:
        _fail(f"review the change first: run `toolhost pins diff {tool}` and pass the hash it prints with --hash")
    if server is not None and not yes:
        _fail(
            f"--server {server} accepts every pending definition of {server} unreviewed; review each with "
            "`toolhost pins diff TOOL`, or pass --yes to accept them all"
        )
    with _access(data_dir, db_url) as a:
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
    with _access(data_dir, db_url) as a:
        rows = a.audit_log.query(user=user, tool=tool, status=status, action=action, limit=limit)
    table = Table(title="audit (newest first)")
    for col in ("time", "user", "key", "action", "tool", "decision", "rule", "status", "ms", "arguments"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            _when(r.at),
            r.user or "-",
            r.key_id or "-",
            r.action,
            r.tool or "-",
            r.decision or "-",
            r.rule or "-",
            r.status or "-",
            "-" if r.duration_ms is None else f"{r.duration_ms:.1f}",
            (r.arguments or "-")[:50],
        )
    _console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``users``, ``roles``, ``keys``, ``grants``, ``approvals``, ``pins`` and ``audit`` to ``app``."""
    app.add_typer(users_app, name="users")
    app.add_typer(roles_app, name="roles")
    app.add_typer(keys_app, name="keys")
    app.add_typer(grants_app, name="grants")
    app.add_typer(approvals_app, name="approvals")
    app.add_typer(pins_app, name="pins")
    app.command("audit")(audit_command)

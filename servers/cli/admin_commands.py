"""``toolhost users|roles|keys|grants``: administering per-user permissions (and wiring of the rest).

Every command takes ``--data-dir`` (else ``$TOOLHOST_HOME``, else the per-user default; see
:mod:`host.paths`) and ``--db-url`` (else ``$TOOLHOST_DATABASE_URL``, else the older ``$TOOLHOST_DB_URL``, else
``<data_dir>/toolhost.db``).
Errors (unknown user, bad pattern, duplicate, ...) print one ``error:`` line naming the fix and
exit with status 1. API keys are printed once, at creation; only their hash is stored.
The ``approvals``, ``pins`` and ``audit`` commands live in :mod:`servers.cli.review_commands`.

Wire into the main app with :func:`register`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from registry.safety.taint import TaintDecision
from servers.cli.admin_common import (
    AsJson,
    DataDir,
    DbUrl,
    fail,
    list_command,
    print_json,
    run_command,
    service,
)
from servers.cli.options import RiskChoice
from servers.cli.review_commands import approvals_app, pins_app
from servers.shared.times import when

__all__ = ["register"]

MaxRisk = Annotated[RiskChoice, typer.Option("--max-risk", help="Highest risk covered.")]
ApprovalOpt = Annotated[
    bool | None,
    typer.Option(
        "--approval/--no-approval",
        help="Always / never ask a human before calls (default: ask for destructive tools only).",
    ),
]
DenyOpt = Annotated[bool, typer.Option("--deny", help="A deny grant (deny wins over every allow).")]
TaintOpt = Annotated[
    TaintDecision | None,
    typer.Option(
        "--taint",
        help="What happens to an egress call of these tools after private and untrusted results in the same "
             "session (allow, approve or deny; default: the config rule toolhost.taint). An exact tool name "
             "beats patterns; otherwise the strictest of the caller's grants wins.",
    ),
]

users_app = typer.Typer(help="Users who may connect to the registry server.", no_args_is_help=True)
roles_app = typer.Typer(help="Roles: named sets of grants given to users.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys (bearer tokens for the HTTP server).", no_args_is_help=True)
grants_app = typer.Typer(help="Grants: which tools a user may see and call.", no_args_is_help=True)


def _approval_text(approval: bool | None) -> str:
    return "default (destructive)" if approval is None else ("always" if approval else "never")


def _grant_cells(g: dict) -> tuple[str, ...]:
    """A deny grant refuses at every risk, so its max risk, approval and taint cells are empty ("-")."""
    if g["effect"] == "deny":
        return str(g["id"]), g["subject"], g["effect"], g["pattern"], "-", "-", "-"
    return (str(g["id"]), g["subject"], g["effect"], g["pattern"], g["max_risk"], _approval_text(g["approval"]),
            g.get("taint") or "default (config)")


def grant_summary(g: dict) -> str:
    """``added grant #ID RULE`` plus what the grant covers: ``(max risk R, approval A)`` for an allow
    grant, ``(deny wins over every allow, at every risk)`` for a deny grant."""
    if g["effect"] == "deny":
        return f"added grant #{g['id']} {g['rule']} (deny wins over every allow, at every risk)"
    taint = f", taint {g['taint']}" if g.get("taint") else ""
    return (f"added grant #{g['id']} {g['rule']} (max risk {g['max_risk']}, "
            f"approval {_approval_text(g['approval'])}{taint})")


GRANT_COLUMNS = ("id", "subject", "effect", "pattern", "max risk", "approval", "taint")


def _add_grant(subject: str, pattern: str, max_risk: RiskChoice, approval: bool | None, deny: bool, kind: str,
               data_dir: DataDir, db_url: DbUrl, taint: TaintDecision | None = None) -> None:
    with service(data_dir, db_url) as svc:
        g = svc.add_grant(subject, pattern, max_risk=max_risk.value, approval=approval, deny=deny, kind=kind,
                          taint=None if taint is None else taint.value)
    typer.echo(grant_summary(g))
    if unmatched := g.get("unmatched"):
        typer.echo(f"warning: {unmatched['warning']} (checked against the tools of the running serve, "
                   f"pid {unmatched['pid']})", err=True)


# -- users --------------------------------------------------------------------------------------
@users_app.command("add")
def users_add(name: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Create user NAME (no access until grants or roles are added)."""
    with service(data_dir, db_url) as svc:
        row = svc.add_user(name)
    typer.echo(f"added user {name}; next: toolhost grants add {name} PATTERN, toolhost keys create {name}")
    if closed := row.get("serve_closed"):
        typer.echo(f"warning: the running serve (pid {closed['pid']}) now refuses every tool until you restart it: "
                   "it started without users (open access); after the restart it requires API keys "
                   f"(toolhost keys create {name})", err=True)


def user_state(u: dict) -> str:
    """``enabled``, or ``disabled by ADMIN since WHEN: REASON`` (a user row of ``users --json``)."""
    if u.get("disabled_at") is None:
        return "enabled"
    reason = f": {u['disabled_reason']}" if u.get("disabled_reason") else ""
    return f"disabled by {u['disabled_by']} since {when(u['disabled_at'])}{reason}"


@users_app.command("list")
def users_list(data_dir: DataDir = None, db_url: DbUrl = None, as_json: AsJson = False) -> None:
    """List users with their state (enabled or disabled), roles, grant and active key counts."""
    list_command(data_dir, db_url, as_json, lambda svc: svc.users(), title="users",
                 columns=("user", "state", "roles", "grants", "active keys", "created"),
                 cells=lambda u: (u["name"], user_state(u), ", ".join(u["roles"]) or "-", str(u["grants"]),
                                  str(u["active_keys"]), when(u["created_at"])),
                 empty="No users yet: add one with `toolhost users add NAME`.", overflow="fold")


@users_app.command("disable")
def users_disable(
    name: str,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (one line; shown with every refusal).")] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Disable user NAME until `toolhost users enable NAME`: their API keys are refused (403), no key can be
    created for them, their grants give nothing and their open approvals are denied. Keys, grants and roles
    are kept. Takes effect at the next request of every running serve."""
    with service(data_dir, db_url) as svc:
        row = svc.disable_user(name, reason)
    if not row["changed"]:
        typer.echo(f"user {name} is already {user_state(row)}")
        return
    denied = row["denied_approvals"]
    typer.echo(f"disabled user {name}: their keys are refused until `toolhost users enable {name}`"
               + (f"; denied open approvals {', '.join(denied)}" if denied else ""))


@users_app.command("enable")
def users_enable(name: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Enable user NAME again: their keys, grants and roles work at the next request."""
    with service(data_dir, db_url) as svc:
        row = svc.enable_user(name)
    typer.echo(f"enabled user {name}" if row["changed"] else f"user {name} is not disabled")


@users_app.command("remove")
def users_remove(name: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Delete user NAME with its grants, role memberships, API keys and approvals."""
    run_command(data_dir, db_url, lambda svc: svc.remove_user(name), f"removed user {name}")


# -- roles --------------------------------------------------------------------------------------
@roles_app.command("add")
def roles_add(
    name: str,
    description: Annotated[str, typer.Option("--description", "-d")] = "",
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Create role NAME."""
    run_command(data_dir, db_url, lambda svc: svc.add_role(name, description), f"added role {name}")


@roles_app.command("list")
def roles_list(data_dir: DataDir = None, db_url: DbUrl = None, as_json: AsJson = False) -> None:
    """List roles with members and grant counts."""
    list_command(data_dir, db_url, as_json, lambda svc: svc.roles(), title="roles",
                 columns=("role", "members", "grants", "description"),
                 cells=lambda r: (r["name"], ", ".join(r["members"]) or "-", str(r["grants"]), r["description"]),
                 empty="No roles yet: add one with `toolhost roles add NAME`.")


@roles_app.command("remove")
def roles_remove(name: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Delete role NAME, its grants and memberships."""
    run_command(data_dir, db_url, lambda svc: svc.remove_role(name), f"removed role {name}")


@roles_app.command("assign")
def roles_assign(role: str, user: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Give USER the role ROLE."""
    run_command(data_dir, db_url, lambda svc: svc.assign_role(user, role), f"user {user} now has role {role}")


@roles_app.command("unassign")
def roles_unassign(role: str, user: str, data_dir: DataDir = None, db_url: DbUrl = None) -> None:
    """Take role ROLE from USER."""
    run_command(data_dir, db_url, lambda svc: svc.unassign_role(user, role), f"user {user} no longer has role {role}")


@roles_app.command("grant")
def roles_grant(
    role: str,
    pattern: str,
    max_risk: MaxRisk = RiskChoice.destructive,
    approval: ApprovalOpt = None,
    deny: DenyOpt = False,
    taint: TaintOpt = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Add a grant to ROLE (PATTERN: server:NAME or a glob like orders__*)."""
    _add_grant(role, pattern, max_risk, approval, deny, "role", data_dir, db_url, taint)


@roles_app.command("revoke")
def roles_revoke(
    role: str, pattern: str, deny: DenyOpt = False, data_dir: DataDir = None, db_url: DbUrl = None
) -> None:
    """Remove ROLE's grant(s) with PATTERN (allow grants; --deny for deny grants)."""
    run_command(data_dir, db_url, lambda svc: svc.remove_grant(role, pattern, deny=deny, kind="role"),
                f"removed grant {pattern} from role {role}")


# -- grants -------------------------------------------------------------------------------------
@grants_app.command("add")
def grants_add(
    user: str,
    pattern: str,
    max_risk: MaxRisk = RiskChoice.destructive,
    approval: ApprovalOpt = None,
    deny: DenyOpt = False,
    taint: TaintOpt = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Grant USER the tools matching PATTERN (server:NAME, or a glob such as orders__* or git__git_status)."""
    _add_grant(user, pattern, max_risk, approval, deny, "user", data_dir, db_url, taint)


@grants_app.command("list")
def grants_list(
    user: Annotated[str | None, typer.Argument(help="Only this user's own grants.")] = None,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """List grants (all, or USER's own; role grants are listed under role:NAME)."""
    list_command(data_dir, db_url, as_json, lambda svc: svc.grants(user, "user" if user else None),
                 title=f"grants of {user}" if user else "grants", columns=GRANT_COLUMNS, cells=_grant_cells,
                 empty="No grants" + (f" for {user}" if user else "")
                 + ": add one with `toolhost grants add USER 'PATTERN'`.")


@grants_app.command("remove")
def grants_remove(
    user: str, pattern: str, deny: DenyOpt = False, data_dir: DataDir = None, db_url: DbUrl = None
) -> None:
    """Remove USER's grant with PATTERN (allow grants; --deny for deny grants)."""
    run_command(data_dir, db_url, lambda svc: svc.remove_grant(user, pattern, deny=deny),
                f"removed grant {pattern} from user {user}")


# -- keys ---------------------------------------------------------------------------------------
@keys_app.command("create")
def keys_create(
    user: str,
    label: Annotated[str, typer.Option("--label", help="A note, e.g. where the key is used.")] = "",
    data_dir: DataDir = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """Create an API key for USER and print it once (only its hash is stored)."""
    with service(data_dir, db_url) as svc:
        info = svc.create_key(user, label)
    if as_json:
        print_json(info)
        return
    typer.echo(f"created key {info['key_id']} for {user}. It is shown only now; store it safely:")
    typer.echo(info["token"])


@keys_app.command("list")
def keys_list(
    user: Annotated[str | None, typer.Argument()] = None, data_dir: DataDir = None, db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """List API keys (never the secrets)."""
    list_command(data_dir, db_url, as_json, lambda svc: svc.keys(user),
                 title=f"API keys of {user}" if user else "API keys",
                 columns=("key id", "user", "label", "created", "last used", "status"),
                 cells=lambda k: (k["key_id"], k["user"], k["label"] or "-", when(k["created_at"]),
                                  when(k["last_used_at"]),
                                  "active" if k["active"] else f"revoked {when(k['revoked_at'])}"),
                 empty="No API keys" + (f" for {user}" if user else "")
                 + ": create one with `toolhost keys create USER`.")


@keys_app.command("revoke")
def keys_revoke(
    user: Annotated[str, typer.Argument(help="The key's user, or the key id alone (see keys list).")],
    key_id: Annotated[str | None, typer.Argument(help="The key id (see keys list); omit with --all.")] = None,
    all_keys: Annotated[bool, typer.Option("--all", help="Revoke every active key of USER.")] = False,
    data_dir: DataDir = None,
    db_url: DbUrl = None,
) -> None:
    """Revoke one API key (`keys revoke [USER] KEY_ID`), or every key of USER with --all; takes
    effect on the next request."""
    with service(data_dir, db_url) as svc:
        if key_id is None and not all_keys:  # a lone argument: a key id, whose user the store knows
            owner = next((k["user"] for k in svc.keys(None) if k["key_id"] == user), None)
            if owner is None:
                fail(f"no API key has the id {user!r}: give a KEY_ID (see `toolhost keys list`), "
                     f"or `toolhost keys revoke {user} --all` for every key of a user")
            user, key_id = owner, user
        ids = svc.revoke_keys(user, None if all_keys else key_id)
    typer.echo(f"revoked {len(ids)} key(s) of {user}: {', '.join(ids) or '-'}")


def register(app: typer.Typer) -> None:
    """Add ``users``, ``roles``, ``keys``, ``grants``, ``approvals``, ``pins`` and ``audit`` to ``app``."""
    app.add_typer(users_app, name="users")
    app.add_typer(roles_app, name="roles")
    app.add_typer(keys_app, name="keys")
    app.add_typer(grants_app, name="grants")
    app.add_typer(approvals_app, name="approvals")
    app.add_typer(pins_app, name="pins")
    from servers.cli.audit_commands import audit_app, grants_self_approval

    grants_app.command("self-approval")(grants_self_approval)
    app.add_typer(audit_app, name="audit")

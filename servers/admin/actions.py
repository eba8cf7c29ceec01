"""The admin actions, implemented once: the HTTP admin API, the web console and the CLI all call these.

Every method is synchronous (it touches the database) and returns plain JSON-ready values
(dicts, lists, str, numbers). Errors are :class:`host.store.StoreError` subclasses from the store
(unknown user, pattern, approval, hash mismatch, ...) whose message names the fix; the API turns
them into ``400``/``404`` JSON errors, the CLI into one ``error:`` line.

Every administrative act is audited here, so the API, the console and the CLI leave the same
trail: decisions as ``approval`` and ``pin`` rows (with who decided), every change of users, roles,
role members, keys, grants, self-approval settings and usage memory, and the config reloads and
reconnects the surfaces report through :meth:`AdminService.acted`, as an ``admin`` row (chained
like every audit row) whose ``user`` is the actor and whose ``status`` names the act
(:data:`ADMIN_ACTS`). A service acts for one actor: :meth:`AdminService.acting_as` gives the
same service for another (the API and console bind the authenticated admin per request).

Approvals are shown with their exact arguments (:mod:`servers.admin.approval_view`); approving
one with hidden (too long) parts needs ``reveal=True``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

from host.access import AccessControl
from host.access import decide as decide_approval
from host.access.gate import call_issuers
from registry import Principal
from registry.policy import matches_pattern
from servers.admin.approval_view import HiddenArguments, approval_view
from servers.admin.protocol import AdminActions
from servers.admin.user_actions import LOCAL_ADMIN, UserAdmin, row_of

__all__ = ["ADMIN_ACTS", "ADMIN_ROLE", "LOCAL_ADMIN", "AdminService", "StoreOff"]

ADMIN_ROLE = "admin"
"""Users with this role may use the admin API and the web console."""

AUDIT_FLUSH_TIMEOUT_SECONDS = 30.0
"""How long ``audit verify``/``export`` wait for the audit writer's queued rows (then read anyway)."""

APPROVAL_STATUSES = ("open", "pending", "approved", "denied", "used", "expired", "all")

ADMIN_ACTS = (
    "user.add", "user.remove", "role.add", "role.remove", "role.assign", "role.unassign", "key.create",
    "key.revoke", "grant.add", "grant.remove", "self-approval.enable", "self-approval.disable", "usage.clear",
    "config.reload", "server.reconnect", "taint.reset", "user.disable", "user.enable",
)
"""The ``status`` of ``admin`` audit rows (pin accepts are ``pin`` rows, decisions ``approval`` rows)."""



class StoreOff(RuntimeError):
    """An admin action needs the permission store, and this serve runs without one (``--auth off``).
    The admin API answers it with 503 ``no_store`` (the CLI then uses the database itself)."""

    def __init__(self) -> None:
        super().__init__("the permission store is off (--auth off); start serve with --auth auto or on "
                         "to administer users, keys, grants, approvals, pins and the audit")


def grant_row(g: Any) -> dict[str, Any]:
    """A :class:`registry.permissions.Grant` as JSON."""
    return {
        "id": g.id,
        "subject": g.source,
        "effect": g.effect.value,
        "pattern": g.pattern,
        "max_risk": g.max_risk.value,
        "approval": g.approval,
        "taint": None if g.taint is None else g.taint.value,
    }


class AdminService(UserAdmin, AdminActions):
    """Admin actions (:class:`servers.admin.protocol.AdminActions`) over one permission store and
    (when serving) one running host.

    Args:
        access: the permission store (``None`` for a serve with ``--auth off``: server, tool, search
            and call views work; every action on users, keys, grants, approvals, pins, usage or the
            audit raises :class:`StoreOff`).
        runtime: the running :class:`host.runtime.HostRuntime` (``None`` from a bare CLI: server,
            tool and search views then answer with what the store knows only).
        on_approval: called ``(approval_id, user, tool, status, by)`` after a decision (events).
        on_user_state: called ``(event, message, fields)`` after a user was disabled or enabled
            (``user.disable``/``user.enable``: the serve's console and log).
    """

    def __init__(
        self,
        access: AccessControl | None,
        runtime: Any = None,
        *,
        on_approval: Callable[[str, str, str, str, str | None], None] | None = None,
        actor: str | None = None,
        on_user_state: Callable[[str, str, dict[str, Any]], None] | None = None,
    ) -> None:
        self._access = access
        self.runtime = runtime
        self.on_approval = on_approval
        self.on_user_state = on_user_state
        if actor is None:
            from servers.shared.local_principal import local_principal_name

            actor = local_principal_name()
        self.actor = actor

    def acting_as(self, actor: str) -> AdminService:
        """This service acting for ``actor`` (a toolhost user, ``local-admin`` or ``local:<os user>``):
        what it does is audited as theirs."""
        other = copy.copy(self)
        other.actor = actor
        return other

    def acted(self, act: str, detail: str = "") -> None:
        """Write the chained ``admin`` audit row of one act by :attr:`actor` (``act`` from
        :data:`ADMIN_ACTS`); a no-op without a store (``--auth off`` keeps no audit)."""
        if act not in ADMIN_ACTS:
            raise ValueError(f"unknown admin act {act!r}")
        if self._access is None:
            return
        self._access.audit(action="admin", principal=Principal(user=self.actor), decision="allow", status=act,
                           detail=detail or None)

    @property
    def access(self) -> AccessControl:
        """The permission store. Raises :class:`StoreOff` when serve runs with ``--auth off``."""
        if self._access is None:
            raise StoreOff
        return self._access

    @property
    def has_store(self) -> bool:
        """Whether a permission store is open (``False`` for ``--auth off``)."""
        return self._access is not None

    def _pin_states(self) -> dict[str, tuple[str, str]]:
        """``{tool: (pin status, hash)}``; empty without a store (nothing is pinned then)."""
        return {} if self._access is None else self._access.pins.states()

    # -- servers and tools -----------------------------------------------------------------
    def servers(self) -> list[dict[str, Any]]:
        """Every configured server as :func:`servers.admin.server_rows.server_row`
        (``toolhost servers --json``'s rows)."""
        if self.runtime is None:
            return []
        from servers.admin.server_rows import server_row

        return [server_row(s) for s in self.runtime.statuses()]

    def code_mode(self) -> dict[str, Any] | None:
        """Code mode's pool size, limits and running scripts
        (:meth:`host.code_mode.CodeMode.describe`), ``None`` when it is off."""
        if self.runtime is None or self.runtime.code_mode is None:
            return None
        return self.runtime.code_mode.describe()

    def reset_taint(self, user: str | None = None) -> dict[str, Any]:
        """End the session taint of stateless callers (2026-07-28: ``caller:<user>:...`` sessions,
        :mod:`servers.gateway.taint_sessions`) — of ``user`` only when given; audited
        ``taint.reset``. Returns ``{"reset": [session ids]}``."""
        if self.runtime is None:
            raise RuntimeError("resetting session taint needs a running toolhost serve")
        ended = self.runtime.end_sessions(f"caller:{user}:" if user else "caller:")
        self.acted("taint.reset", f"{len(ended)} stateless taint sessions" + (f" of user {user}" if user else ""))
        return {"reset": ended}

    def visible_tools(self, user: str | None = None) -> dict[str, Any]:
        """What ``toolhost tools`` lists: ``{"tools": [full definition + timeout_seconds], "held":
        [{"name", "server", "reason"}]}`` for ``user`` (``None``: the local admin — every tool of a
        connected server except held definitions)."""
        from registry.search import tool_definition

        if self.runtime is None:
            return {"tools": [], "held": []}
        records = self.runtime.visible_tools(self.principal(user))
        held = [{"name": t, "server": s.name, "reason": r} for s in self.runtime.statuses() for t, r in s.held.items()]
        return {"tools": [tool_definition(t) | {"timeout_seconds": t.timeout_seconds,
                                                "flow": self.runtime.taint.labels(t).as_dict()} for t in records],
                "held": held}

    def principal(self, user: str | None) -> Principal:
        """``user``'s principal (grants apply), or the local admin's (see :mod:`host.access.local_admin`).

        Raises:
            host.store.NotFound: no such user.
        """
        from host.access import local_admin_principal
        from servers.shared.local_principal import local_principal_name

        if user:
            return self.access.principal_for_user(user)
        return local_admin_principal(local_principal_name())

    def tools(self) -> list[dict[str, Any]]:
        """Every registered tool with risk, pin state (``trusted``/``changed``/``held``/``unpinned``),
        availability (its server is connected *and* its served definition is the pinned one) and,
        when unavailable, ``unavailable`` (why, and what to run)."""
        if self.runtime is None:
            return []
        states = self._pin_states()
        statuses = {s.name: s for s in self.runtime.statuses()}
        rows = []
        for t in self.runtime.registry.tools():
            pin = states.get(t.qualified_name)
            status = statuses.get(t.server)
            held = pin is not None and (pin[0] != "trusted" or pin[1] != t.definition_hash)
            if held:
                why = (f"definition held: review `toolhost pins diff {t.qualified_name}`, then "
                       f"`toolhost pins accept {t.qualified_name} --hash HASH`")
            elif status is None or status.state.value not in ("connected", "degraded"):
                why = f"server {t.server} is {status.state.value if status else 'not configured'}" + (
                    f": {status.error}" if status is not None and status.error else "")
            else:
                why = None
            rows.append({
                "name": t.qualified_name,
                "server": t.server,
                "risk": t.risk.value,
                "open_world": t.open_world,
                "flow": self.runtime.taint.labels(t).short(),
                "flow_reasons": "; ".join(f"{k.value}: {v}" for k, v in self.runtime.taint.labels(t).reasons.items()),
                "timeout_seconds": t.timeout_seconds,
                "description": t.description or "",
                "pin": pin[0] if pin else "unpinned",
                "available": why is None,
                "unavailable": why,
            })
        held = [] if self._access is None else [p for p in self._access.pins.list() if p.status in ("held", "changed")]
        listed = {r["name"] for r in rows}
        for p in held:  # held tools are not in the registry's visible set but must show up here
            if p.tool not in listed:
                rows.append({"name": p.tool, "server": p.server, "risk": None, "open_world": None,
                             "timeout_seconds": None, "description": "", "pin": p.status, "available": False,
                             "unavailable": f"definition held: review `toolhost pins diff {p.tool}`, then "
                                            f"`toolhost pins accept {p.tool} --hash HASH`"})
        return sorted(rows, key=lambda r: r["name"])

    def search(self, query: str, user: str | None = None, limit: int = 10) -> dict[str, Any]:
        """Search as ``user`` (``None``: the local admin's full view) with scores and why each hit
        ranked (the query terms found in the tool's name, description and parameters)."""
        if self.runtime is None:
            return {"query": query, "mode": "unavailable", "weak": False, "invalid": False, "hits": [],
                    "message": "no running host"}
        if user:
            result = self.runtime.search(query, self.access.principal_for_user(user), limit=limit)
        else:  # every registered tool whatever the grants, but changed definitions stay held (as for the local CLI)
            held = {n for n, (status, _h) in self._pin_states().items() if status in ("held", "changed")}
            result = self.runtime.search_index.search(query, visible=lambda t: t.qualified_name not in held,
                                                      visible_key=None, limit=limit)
        from servers.shared.search_view import search_view

        return search_view(query, result, self.runtime.taint.labels) | {"user": user}

    # -- grants (users, roles and keys: servers.admin.user_actions) -------------------------
    def grants(self, subject: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        return [grant_row(g) for g in self.access.grants.list(subject, kind=kind)]

    def add_grant(
        self, subject: str, pattern: str, *, max_risk: str = "destructive", approval: bool | None = None,
        deny: bool = False, kind: str = "user", taint: str | None = None,
    ) -> dict[str, Any]:
        """Add a grant: its row and ``rule``, plus ``"unmatched": {"pid", "warning"}`` when this is a
        serve's service (pid) and ``pattern`` covers none of its registered tools (a typo, or a server
        not connected yet). Raises :class:`host.store.InvalidValue` for a bad value."""
        g = self.access.grants.add(subject, pattern, effect="deny" if deny else "allow", max_risk=max_risk,
                                   approval=approval, kind=kind, taint=taint)
        self.acted("grant.add", f"grant #{g.id} {g.rule}")
        row = grant_row(g) | {"rule": g.rule}
        if self.runtime is not None and not any(matches_pattern(pattern, x) for x in self.runtime.registry.tools()):
            row["unmatched"] = {"pid": os.getpid(), "warning": (
                f"pattern {pattern!r} matches no tool registered now: check the spelling (qualified names are "
                "server__tool; server:NAME for a whole server) or that its server is connected")}
        return row

    def remove_grant(self, subject: str, pattern: str, *, deny: bool = False, kind: str = "user") -> int:
        n = self.access.grants.remove(subject, pattern, effect="deny" if deny else "allow", kind=kind)
        self.acted("grant.remove", f"{'deny' if deny else 'allow'}:{pattern}@{kind}:{subject} ({n} removed)")
        return n

    def set_self_approval(self, subject: str, pattern: str, enable: bool, *, kind: str = "user",
                          by: str) -> dict[str, Any]:
        """Let the callers of one allow grant approve their own calls (MCP elicitation); audited."""
        self.access.grants.set_self_approval(subject, pattern, enable, kind=kind)
        self.access.audit(action="admin", principal=Principal(user=by), decision="allow",
                          rule=f"allow:{pattern}@{kind}:{subject}",
                          status="self-approval." + ("enable" if enable else "disable"), approver=by,
                          detail=f"self-approval {'enabled' if enable else 'disabled'} on "
                          f"allow:{pattern}@{kind}:{subject}")
        return {"subject": subject, "kind": kind, "pattern": pattern, "self_approval": enable}

    # -- usage memory -----------------------------------------------------------------------
    def usage_stats(self) -> dict[str, Any]:
        """``{"pairs", "tools", "oldest"}`` of tool_search's usage memory (never the queries)."""
        from host.store.usage import UsageMemory

        st = UsageMemory(self.access.store).stats()
        return {"pairs": st.pairs, "tools": st.tools, "oldest": st.oldest}

    def usage_clear(self, tool: str | None = None) -> int:
        """Forget the remembered queries (all, or ``tool``'s); how many were forgotten."""
        from host.store.usage import UsageMemory

        mem = UsageMemory(self.access.store)
        n = mem.forget_tool(tool) if tool else mem.clear()
        self.acted("usage.clear", f"{n} remembered queries" + (f" of {tool}" if tool else ""))
        return n

    # -- approvals --------------------------------------------------------------------------
    def approvals(self, status: str = "open", user: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        if status not in APPROVAL_STATUSES:
            raise ValueError(f"status must be one of {', '.join(APPROVAL_STATUSES)}, got {status!r}")
        rows = self.access.approvals.list(status=None if status == "all" else status, user=user, limit=limit)
        return [_shown(row_of(r), reveal=False) for r in rows]

    def approval(self, approval_id: str, reveal: bool = False) -> dict[str, Any]:
        """One approval with its exact arguments (:func:`servers.admin.approval_view.approval_view`):
        ``arguments`` (strings over :data:`~servers.admin.approval_view.REVEAL_CHARS` hidden behind a
        marker unless ``reveal``), ``hidden`` ``[{"path", "length", "sha256"}]``, ``complete``,
        ``source`` (``exact``/``redacted``), plus the row's fields."""
        return _shown(row_of(self.access.approvals.get(approval_id)), reveal=reveal)

    def decide(
        self, approval_id: str, approve: bool, by: str, *, how: str = "admin", approver_user: str | None = None,
        reveal: bool = False,
    ) -> dict[str, Any]:
        """Approve (the same call may then run once before it expires) or deny; audited by
        :func:`host.access.decide` (who, how, when, which call).

        Args:
            by: who decides, as recorded: a toolhost user (console/API log-in), ``local-admin``
                (the local admin token) or ``local:<os user>`` (the CLI).
            how: ``admin`` (API/console) or ``cli``.
            approver_user: the toolhost user who decides, checked to hold an approver right and not
                to be the caller; for ``admin`` decisions it defaults to ``by`` unless the local admin decides.
            reveal: the approver saw the hidden parts (needed to approve a call whose default view
                hides a too-long value or shows only a redacted copy).

        Raises:
            host.store.NotFound, host.access.NotAnApprover, host.store.ApprovalNotPending,
            servers.admin.approval_view.HiddenArguments (approve without ``reveal`` where parts were hidden).
        """
        from host.access import NotAnApprover

        if approver_user is None and how == "admin" and by != LOCAL_ADMIN and not by.startswith("local:"):
            approver_user = by
        current = self.access.approvals.get(approval_id)
        if {by, approver_user} & set(call_issuers(current.user)):
            raise NotAnApprover(approval_id, approver_user or by,
                                "they issued this call; another approver must decide")
        if approve and not reveal:
            view = approval_view(row_of(current))
            if not view["complete"] and current.status == "pending":
                raise HiddenArguments(approval_id, view["hidden"], source=view["source"])
        info = decide_approval(self.access, approval_id, approve=approve, by=by, how=how, approver_user=approver_user)
        status = "approved" if approve else "denied"
        if self.on_approval is not None:
            self.on_approval(approval_id, info.user, info.tool, status, by)
        return row_of(info)

    # -- pins -------------------------------------------------------------------------------
    def pins(self, status: str | None = None, server: str | None = None) -> list[dict[str, Any]]:
        return [row_of(p) for p in self.access.pins.list(status=status, server=server)]

    def pin_diff(self, tool: str) -> dict[str, Any]:
        return row_of(self.access.pins.review(tool))

    def accept_pin(self, tool: str, reviewed_hash: str, by: str) -> list[dict[str, Any]]:
        """Accept the served definition of ``tool`` named by ``reviewed_hash`` (from :meth:`pin_diff`); audited."""
        pin = self.access.pins.accept(tool, reviewed_hash)
        return self._accepted([(pin.tool, pin.definition_hash or "")], by)

    def accept_server_pins(self, server: str, by: str) -> list[dict[str, Any]]:
        """Accept every changed/held definition of ``server`` unreviewed; audited."""
        return self._accepted(self.access.pins.accept_server(server), by)

    def _accepted(self, accepted: list[tuple[str, str]], by: str) -> list[dict[str, Any]]:
        for name, h in accepted:
            self.access.audit(action="pin", principal=Principal(user=by), tool=name, decision="allow",
                              status="accepted",
                              detail=f"definition {h}")
        return [{"tool": name, "definition_hash": h} for name, h in accepted]

    # -- audit ------------------------------------------------------------------------------
    def audit(
        self, *, user: str | None = None, tool: str | None = None, status: str | None = None,
        action: str | None = None, since: float | None = None, after_id: int | None = None, limit: int = 50,
    ) -> list[dict[str, Any]]:
        """Entries newest first; ``since`` (UNIX s) and ``after_id`` keep only newer ones (follow mode)."""
        rows = self.access.audit_log.query(user=user, tool=tool, status=status, action=action,
                                           limit=limit if since is None and after_id is None else 10_000)
        out = []
        for r in rows:
            if since is not None and r.at < since:
                continue
            if after_id is not None and r.id <= after_id:
                continue
            out.append(row_of(r))
        return out[:limit]

    def audit_verify(self) -> dict[str, Any]:
        """The hash chain after every queued row is written (:mod:`host.store.audit_chain`):
        ``{"rows": verified, "broken": None | {"row_id", "kind", "message"}}``."""
        self.access.audit_writer.flush(AUDIT_FLUSH_TIMEOUT_SECONDS)
        count, broken = self.access.audit_log.verify()
        return {"rows": count, "broken": None if broken is None else
                {"row_id": broken.row_id, "kind": broken.kind, "message": broken.message}}

    def audit_rows(self, *, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Up to ``limit`` stored audit rows (every column, as ``toolhost audit export`` writes them)
        with ids above ``after_id``, oldest first, after every queued row is written."""
        import itertools

        self.access.audit_writer.flush(AUDIT_FLUSH_TIMEOUT_SECONDS)
        return list(itertools.islice(self.access.audit_log.rows(after_id=after_id, batch=limit), limit))


def _shown(row: dict[str, Any], *, reveal: bool) -> dict[str, Any]:
    """An approval row as shown to approvers: the exact arguments' view in place of the stored copy."""
    exact = {"arguments_json": row.pop("arguments_json", None), "arguments_redacted": row["arguments_redacted"]}
    return row | approval_view(exact, reveal=reveal)

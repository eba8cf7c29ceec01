"""The console's audit table: one page of rows with filters, a time range, keyset pagination and
list calls folded away by default; and one row's whole record.

Reads the audit table of the permission store (:data:`host.store.schema.audit`) directly, newest
first. Pages are keyed by row id (``before``: older rows than this id; ``after``: newer), so a page
stays put while new rows arrive. Times in the form are UTC (``YYYY-mm-ddTHH:MM``, as an HTML
``datetime-local`` input sends them).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import func, select

from host.access import AccessControl
from host.code_mode import parse_inner_detail
from host.store import schema as s
from host.store.audit import AuditEntry

__all__ = ["ACTIONS", "LIST_ACTIONS", "PAGE_SIZES", "AuditPage", "AuditQuery", "BadFilter", "audit_entry", "audit_page"]

LIST_ACTIONS = ("list",)
"""Audit actions of read-only listings (``tools/list``, ``prompts/list``, ``resources/list`` …):
hidden from the table unless the operator asks for them."""

PAGE_SIZES = (25, 50, 100, 200)
ACTIONS = ("call", "list", "search", "auth", "approval", "pin", "admin")
"""The audit rows' actions (:class:`host.store.AuditRecord`), offered as the action filter."""
_FIELDS = tuple(AuditEntry.__dataclass_fields__)


class BadFilter(ValueError):
    """A filter value the page cannot use; the message names the field and the expected form."""


def _utc(value: str, name: str) -> float | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise BadFilter(f"{name}: expected a UTC time like 2026-12-06T04:30, got {value!r}") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).timestamp()


def _id(value: str, name: str) -> int | None:
    if not value:
        return None
    if not value.isdigit():
        raise BadFilter(f"{name}: expected a row id (a whole number), got {value!r}")
    return int(value)


@dataclass
class AuditQuery:
    """The audit page's query string, parsed: equality filters, a UTC time range, page size, whether
    list calls are shown, and the keyset position (``before``/``after`` a row id)."""

    user: str = ""
    tool: str = ""
    status: str = ""
    action: str = ""
    since: str = ""
    until: str = ""
    size: int = 50
    lists: bool = False
    before: int | None = None
    after: int | None = None
    _range: tuple[float | None, float | None] = field(default=(None, None), repr=False)

    @classmethod
    def parse(cls, params: Any) -> AuditQuery:
        """From request query parameters. Raises :class:`BadFilter`."""
        size = params.get("size") or "50"
        if not size.isdigit() or int(size) not in PAGE_SIZES:
            raise BadFilter(f"size: expected one of {', '.join(map(str, PAGE_SIZES))}, got {size!r}")
        q = cls(**{k: (params.get(k) or "").strip() for k in ("user", "tool", "status", "action", "since", "until")},
                size=int(size), lists=params.get("lists") == "1", before=_id(params.get("before") or "", "before"),
                after=_id(params.get("after") or "", "after"))
        q._range = (_utc(q.since, "from"), _utc(q.until, "to"))
        return q

    def link(self, **change: Any) -> str:
        """This query's URL with ``change`` applied (keyset fields reset unless given)."""
        values = {"user": self.user, "tool": self.tool, "status": self.status, "action": self.action,
                  "since": self.since, "until": self.until, "size": str(self.size), "lists": "1" if self.lists else ""}
        values |= {k: ("" if v is None else str(v)) for k, v in change.items()}
        return "/admin/audit?" + urlencode({k: v for k, v in values.items() if v and not (k == "size" and v == "50")})

    @property
    def export(self) -> str:
        """``GET /admin/api/audit/export`` (JSON Lines, needs an API key) for the same equality filters
        and start time (the export API has no end time and never folds list calls)."""
        start = self._range[0]
        values = {"user": self.user, "tool": self.tool, "status": self.status, "action": self.action,
                  "since": "" if start is None else f"{start:.0f}"}
        return "/admin/api/audit/export?" + urlencode({k: v for k, v in values.items() if v})

    def conditions(self, *, lists: bool | None = None) -> list[Any]:
        c = s.audit.c
        conds = [col == val for col, val in ((c.user, self.user), (c.tool, self.tool), (c.status, self.status),
                                              (c.action, self.action)) if val]
        start, end = self._range
        if start is not None:
            conds.append(c.at >= start)
        if end is not None:
            conds.append(c.at < end)
        show_lists = self.lists if lists is None else lists
        if not show_lists and not self.action:
            conds.append(c.action.not_in(LIST_ACTIONS))
        return conds


@dataclass
class AuditPage:
    rows: list[dict[str, Any]]
    newer: str | None
    """The link to the newer page, ``None`` on the newest."""
    older: str | None
    hidden_lists: int
    """How many rows of the filter are list calls, hidden (0 when shown)."""


def audit_page(access: AccessControl, q: AuditQuery) -> AuditPage:
    """One page of ``q``: ``size`` rows newest first, with links to the newer and older pages."""
    c = s.audit.c
    conds = q.conditions()
    stmt = select(s.audit)
    if q.after is not None:  # the newer page: the `size` rows just above `after`, shown newest first
        stmt = stmt.where(*conds, c.id > q.after).order_by(c.id.asc())
    else:
        stmt = stmt.where(*conds, *([c.id < q.before] if q.before is not None else [])).order_by(c.id.desc())
    with access.store.read() as conn:
        found = _tallied(conn, [dict(r._mapping) for r in conn.execute(stmt.limit(q.size + 1))])
        hidden = 0
        if not q.lists and not q.action:
            hidden = conn.execute(select(func.count()).select_from(s.audit)
                                  .where(*q.conditions(lists=True), c.action.in_(LIST_ACTIONS))).scalar_one()
    more = len(found) > q.size
    found = found[: q.size]
    if q.after is not None and not more:  # nothing newer beyond this page: show the newest page
        return audit_page(access, replace(q, after=None, before=None))
    if q.after is not None:
        found.reverse()
    rows = [_shown(r) for r in found]
    newest_page = q.after is None and q.before is None
    oldest_page = q.after is None and not more
    return AuditPage(
        rows=rows,
        newer=None if newest_page or not rows else q.link(after=rows[0]["id"]),
        older=None if oldest_page or not rows else q.link(before=rows[-1]["id"]),
        hidden_lists=hidden,
    )


def audit_entry(access: AccessControl, row_id: int) -> dict[str, Any] | None:
    """One audit row with every stored column (arguments as stored: the redacted copy), plus
    ``script`` (``{"script_id", "sha256", "parent", "step"?}``) for a code-mode row; ``None`` if absent."""
    with access.store.read() as conn:
        row = conn.execute(select(s.audit).where(s.audit.c.id == row_id)).first()
        return None if row is None else _shown(_tallied(conn, [dict(row._mapping)])[0])


def _tallied(conn: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with the current count of each aggregated failed-authentication row in its detail
    (the count lives outside the hash chain, in ``audit_tally``; as :meth:`host.store.AuditLog.query`)."""
    auth_ids = [r["id"] for r in rows if r["action"] == "auth"]
    if not auth_ids:
        return rows
    tally = dict(conn.execute(select(s.audit_tally).where(s.audit_tally.c.audit_id.in_(auth_ids))).all())
    for r in rows:
        if r["id"] in tally and r["detail"]:
            r["detail"] = f"{tally[r['id']]} failed attempts since " + r["detail"].partition(" since ")[2]
    return rows


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: row.get(k) for k in _FIELDS}
    out["script"] = parse_inner_detail(out["detail"])
    return out

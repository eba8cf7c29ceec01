"""The console's audit table query on a real store: pages of the asked size newest first, keyset
pages that cover every row exactly once in both directions, list calls folded unless asked for, a
UTC time range, and filter errors that name the field and the expected form."""

from __future__ import annotations

import datetime as dt
from urllib.parse import parse_qsl, urlsplit

import pytest

from host.access import AccessControl
from servers.admin.audit_page import AuditQuery, BadFilter, audit_entry, audit_page

T0 = dt.datetime(2026, 3, 1, 8, 0, tzinfo=dt.UTC).timestamp()


@pytest.fixture
def access(tmp_path):
    a = AccessControl.open(tmp_path / "data")
    rows = []
    for i in range(110):
        rows.append({"action": "call", "user": "alice", "tool": "orders__get_order", "status": "ok",
                     "at": T0 + 60 * i, "arguments": {"order_id": f"A{i}", "api_key": "sk-live-abcdef0123456789"}})
        if i % 5 == 0:
            rows.append({"action": "list", "user": "alice", "status": "ok", "at": T0 + 60 * i + 1})
    a.audit_log.record_many(rows)
    yield a
    a.close()


def _query(link: str) -> AuditQuery:
    return AuditQuery.parse(dict(parse_qsl(urlsplit(link).query)))


def test_pages_walk_every_row_once_newest_first_without_list_calls(access) -> None:
    page = audit_page(access, AuditQuery.parse({}))
    assert len(page.rows) == 50 and page.newer is None and page.hidden_lists == 22
    seen = [r["id"] for r in page.rows]
    while page.older:
        page = audit_page(access, _query(page.older))
        seen += [r["id"] for r in page.rows]
    assert len(seen) == 110 == len(set(seen)) and seen == sorted(seen, reverse=True)
    assert [len(p) for p in (seen[:50], seen[50:100], seen[100:])] == [50, 50, 10]
    back = audit_page(access, _query(page.newer))  # from the oldest page, newer again
    assert [r["id"] for r in back.rows] == seen[50:100] and back.older is not None
    first = audit_page(access, _query(back.newer))
    assert [r["id"] for r in first.rows] == seen[:50] and first.newer is None


def test_list_calls_shown_on_request_time_range_and_size(access) -> None:
    shown = audit_page(access, AuditQuery.parse({"lists": "1", "size": "200"}))
    assert len(shown.rows) == 132 and shown.hidden_lists == 0
    assert sum(r["action"] == "list" for r in shown.rows) == 22
    only = audit_page(access, AuditQuery.parse({"action": "list", "size": "25"}))
    assert len(only.rows) == 22 and only.hidden_lists == 0
    window = audit_page(access, AuditQuery.parse({"since": "2026-03-01T08:10", "until": "2026-03-01T08:15"}))
    assert window.rows[0]["arguments"] == '{"api_key":"[REDACTED]","order_id":"A14"}'
    assert [dt.datetime.fromtimestamp(r["at"], dt.UTC).minute for r in window.rows] == [14, 13, 12, 11, 10]
    assert window.hidden_lists == 1 and window.newer is None and window.older is None
    assert AuditQuery.parse({"user": "alice", "since": "2026-03-01T08:10"}).export == (
        f"/admin/api/audit/export?user=alice&since={T0 + 600:.0f}")


def test_one_row_and_filter_errors(access) -> None:
    newest = audit_page(access, AuditQuery.parse({})).rows[0]
    row = audit_entry(access, newest["id"])
    assert row is not None and row["row_hash"] and row["script"] is None and "sk-live" not in row["arguments"]
    assert audit_entry(access, 10_000) is None
    with pytest.raises(BadFilter, match=r"^from: expected a UTC time like 2026-12-06T04:30, got 'noon'$"):
        AuditQuery.parse({"since": "noon"})
    with pytest.raises(BadFilter, match=r"^size: expected one of 25, 50, 100, 200, got '7'$"):
        AuditQuery.parse({"size": "7"})
    with pytest.raises(BadFilter, match=r"^before: expected a row id \(a whole number\), got 'x'$"):
        AuditQuery.parse({"before": "x"})


def test_aggregated_failed_logins_show_their_current_count(access) -> None:
    for _ in range(3):
        access.audit_log.record_auth_failure("k_bad", reason="invalid or revoked API key")
    page = audit_page(access, AuditQuery.parse({"action": "auth"}))
    assert len(page.rows) == 1 and page.rows[0]["detail"].startswith("3 failed attempts since ")
    assert page.rows[0]["detail"] == access.audit_log.query(action="auth")[0].detail
    assert audit_entry(access, page.rows[0]["id"])["detail"] == page.rows[0]["detail"]

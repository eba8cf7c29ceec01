"""The console's audit table, detail pages and operator aids in a real headless Chromium: a 50-row
audit page one line per row with list calls folded away, keyset pages, a time range and a row's
whole record; the pending-approvals badge; server and tool pages; a new tool of a pinned server held
and shown with its whole definition; the warning for a grant that matches no tool; post-redirect-get
for a new API key; user disable/delete and role creation (audited as the admin); a styled 404;
the search playground's syntax and per-hit approval and availability. Screenshots go to
``test-artifacts/console/`` (paths printed)."""

from __future__ import annotations

import datetime as dt
import re

import httpx2
from playwright.sync_api import Page

from host.access import AccessControl
from tests.admin.support import PY, Serve, config, people
from tests.admin.test_console_browser import browser_page, call, shot  # noqa: F401 - the fixture
from tests.providers.records import record

T0 = dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC).timestamp()
CALLS = 120
SCRIPT = "script sc_00000000000000aa sha256:" + "ab" * 32 + " parent:call-7 step:3"


def _seed(data) -> None:
    """``shop`` already pinned (so its tools are new when served) and 120 old call rows with a list
    call after every fourth and a code-mode step at the end, one minute apart from ``T0``."""
    a = AccessControl.open(data)
    try:
        a.pins.observe("shop", [record("shop", "legacy_lookup")])
        rows = []
        for i in range(CALLS):
            rows.append({"action": "call", "user": "alice", "tool": "orders__get_order", "decision": "allow",
                         "rule": "allow:orders__*@user:alice a rule long enough to need an ellipsis " * 2,
                         "status": "ok", "duration_ms": 12.5, "at": T0 + 60 * i,
                         "arguments": {"order_id": f"A{i:04d}", "note": "x" * 300, "password": "hunter2"}})
            if i % 4 == 3:
                rows.append({"action": "list", "user": "alice", "status": "ok", "at": T0 + 60 * i + 1})
        rows.append({"action": "call", "user": "alice", "tool": "orders__get_order", "decision": "allow",
                     "status": "ok", "at": T0 + 60 * CALLS, "detail": SCRIPT, "arguments": {"token": "s3cr3t"}})
        a.audit_log.record_many(rows)
    finally:
        a.close()


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M")


def _ids(page: Page) -> list[int]:
    return [int(x) for x in page.locator("table.audit tbody tr td:first-child").all_inner_texts()]


def _cells(page: Page, n: int) -> list[str]:
    return page.locator(f"table.audit tbody tr td:nth-child({n})").all_inner_texts()


def test_audit_table_detail_pages_and_operator_aids(tmp_path, browser_page: Page) -> None:  # noqa: F811
    page = browser_page
    data = tmp_path / "data"
    keys = people(data)
    _seed(data)
    cfg = config(tmp_path, shop={"command": PY, "args": ["-m", "servers.examples.orders"]},
                 broken={"command": "sh", "args": ["-c", "echo '<b>certificate verify failed</b>' >&2; exit 3"]})
    with Serve(cfg, data) as serve:
        base = serve.url
        page.goto(base + "/admin/login")
        page.fill("#key", keys["root"])
        page.click("button[type=submit]")
        assert page.url == base + "/admin/servers"

        # -- the audit table: 50 rows, one line each, list calls folded ------------------------------
        page.goto(base + "/admin/audit?user=alice")
        first = _ids(page)
        assert len(first) == 50 and first == sorted(first, reverse=True)
        assert set(_cells(page, 4)) == {"call"}  # no list row by default
        assert re.search(r"^30 list call\(s\) \(tools/list, prompts/list, …\) hidden", page.inner_text("p.hint"))
        heights = page.eval_on_selector_all("table.audit tbody tr",
                                            "rows => rows.map(r => r.getBoundingClientRect().height)")
        assert len(set(heights)) == 1 and heights[0] < 30, heights  # one line per row, whatever the content
        total = page.evaluate("document.documentElement.scrollHeight")
        assert total < 2000, total  # was 5,300 px for 50 rows
        shot(page, "audit-table")
        assert _cells(page, 8)[1].startswith("allow:orders__*@user:alice")  # the rule, cut by CSS only

        # keyset pages: older, then newer again
        page.click("a[rel=next]")
        older = _ids(page)
        assert len(older) == 50 and max(older) < min(first)
        page.click("a[rel=prev]")
        assert _ids(page) == first
        page.click("#show-lists")
        assert "list" in _cells(page, 4) and len(_ids(page)) == 50

        # a time range: [T0+10 min, T0+20 min) holds calls 10..19
        page.goto(base + f"/admin/audit?user=alice&since={_iso(T0 + 600)}&until={_iso(T0 + 1200)}")
        assert _cells(page, 2) == [f"2026-01-01 10:{m:02d}:00Z" for m in range(19, 9, -1)]
        assert page.locator("a[rel=next]").count() == 0 and page.locator("a[rel=prev]").count() == 0
        page.goto(base + "/admin/audit?since=yesterday")
        assert page.inner_text(".msg.err") == "from: expected a UTC time like 2026-12-06T04:30, got 'yesterday'"

        # a row's whole record: click anywhere on it
        page.goto(base + f"/admin/audit?user=alice&until={_iso(T0 + 60 * CALLS + 60)}")
        page.locator("table.audit tbody tr").first.click(position={"x": 600, "y": 8})
        assert re.fullmatch(re.escape(base) + r"/admin/audit/\d+", page.url)
        record_text = page.inner_text("dl")
        assert "sc_00000000000000aa · step 3 · parent call call-7" in record_text
        assert "s3cr3t" not in page.content() and '"token"' in page.inner_text("#arguments")
        shot(page, "audit-row")

        # -- the pending-approvals badge, on every page, and who decided -----------------------------
        assert page.locator("#pending-badge").count() == 0
        is_error, _text, err = call(base, keys["alice"], "orders__cancel_order", {"order_id": "A1002"})
        assert is_error and err["code"] == "approval_required"
        for path in ("/admin/servers", "/admin/tools", "/admin/audit", "/admin/search", "/admin/nowhere"):
            page.goto(base + path)
            assert page.inner_text("#pending-badge") == "1", path
        shot(page, "badge-and-404")
        page.goto(base + f"/admin/approvals/{err['approval_id']}")
        page.click("form[action$='/approve'] button")
        assert page.locator("#pending-badge").count() == 0
        page.goto(base + "/admin/approvals?status=all")
        row = page.locator("tr", has_text=err["approval_id"]).inner_text().split("\t")
        assert row[3] == "approved" and row[6] == "root (admin)" and re.fullmatch(r"\d{4}-.*Z", row[7])
        shot(page, "approvals-history")

        # -- server and tool pages -----------------------------------------------------------------
        page.goto(base + "/admin/servers")
        page.click("a[href='/admin/servers/orders']")
        assert page.url == base + "/admin/servers/orders"
        facts = dict(zip(page.locator("dl dt").all_inner_texts(), page.locator("dl dd").all_inner_texts(), strict=True))
        assert facts["state"].startswith("connected") and facts["transport"] == "stdio"
        assert re.fullmatch(r"20\d\d-\d\d-\d\d \((handshake|stateless) era\)", facts["protocol"])
        assert facts["server"].startswith("orders") and re.fullmatch(r"\d+\.\d\d s", facts["connect time"])
        assert facts["last error"] == "-"
        shot(page, "server")
        page.click("a[href='/admin/tools/orders__cancel_order']")
        assert page.url == base + "/admin/tools/orders__cancel_order"
        assert '"order_id"' in page.inner_text("#schema") and page.inner_text(".risk") == "destructive"
        assert [r.split("\t")[1:4] for r in page.locator("#tool-grants tr").all_inner_texts()] == [
            ["user:alice", "allow", "orders__*"]]
        assert page.inner_text("#availability") == "yes"
        shot(page, "tool")
        page.goto(base + "/admin/servers/broken")  # a failed server: its error and stderr tail, escaped
        assert "<b>certificate verify failed</b>" in page.inner_text("#stderr")
        assert page.locator("#stderr b").count() == 0 and page.inner_text("dl dd.wrap") != "-"
        shot(page, "server-failed")

        # -- a new tool of a pinned server: held, shown as new with its whole definition ------------
        page.goto(base + "/admin/tools")
        held = page.locator("tr", has_text="shop__cancel_order").inner_text().split("\t")
        assert held[4] == "new (held)" and held[5].startswith("no")
        page.goto(base + "/admin/pins")
        pin_row = page.locator("tr", has_text="shop__cancel_order").inner_text().split("\t")
        assert pin_row[2:4] == ["held new", "new tool"]
        page.click("a[href='/admin/pins/shop__cancel_order']")
        assert "New tool on an already pinned server" in page.inner_text("#new-tool")
        definition = page.inner_text("#definition")
        assert '"name": "cancel_order"' in definition and '"inputSchema"' in definition and '"order_id"' in definition
        shot(page, "pin-new-tool")
        page.goto(base + "/admin/search?q=cancel+order")
        assert all(not n.startswith("shop__") for n in page.locator("#hits tbody tr td:nth-child(2)").all_inner_texts())

        # -- the search playground: syntax, needs approval, availability ------------------------------
        page.goto(base + "/admin/search")
        assert [r.split("\t")[0] for r in page.locator("#syntax tbody tr").all_inner_texts()] == [
            "free text", "select:", "regex:"]
        page.goto(base + "/admin/search?q=cancel+order&user=alice")
        hit = page.locator("#hits tbody tr", has_text="orders__cancel_order").first.inner_text().split("\t")
        assert hit[1] == "orders__cancel_order" and hit[5:7] == ["yes", "yes"]
        get = page.locator("#hits tbody tr", has_text="orders__get_order").first.inner_text().split("\t")
        assert get[5:7] == ["no", "yes"]
        shot(page, "search-hits")

        # -- a grant that matches no tool warns -------------------------------------------------------
        page.goto(base + "/admin/grants")
        add = page.locator("form[action='/admin/grants']")
        add.locator("select[name=subject]").select_option("alice")
        add.locator("input[name=pattern]").fill("ordres__*")
        add.locator("button[type=submit]").click()
        assert re.fullmatch(r"added grant #\d+ .*; but pattern 'ordres__\*' matches no tool registered now: "
                            r"check the spelling .*", page.inner_text(".msg.warn"))
        assert page.locator("tr", has_text="ordres__*").inner_text().split("\t")[7] == "0"
        assert page.locator("tr", has_text="orders__*").first.inner_text().split("\t")[6:8] == ["default (config)", "3"]
        shot(page, "grant-warning")
        add.locator("input[name=pattern]").fill("server:orders")
        add.locator("button[type=submit]").click()
        assert page.locator(".msg.warn").count() == 0 and page.inner_text(".msg.ok").startswith("added grant #")

        # -- taint per allow grant; a deny grant has no max risk, approval or taint ---------------------
        add.locator("select[name=subject]").select_option("alice")
        add.locator("input[name=pattern]").fill("orders__get_*")
        add.locator("select[name=taint]").select_option("approve")
        add.locator("button[type=submit]").click()
        assert re.fullmatch(r"added grant #\d+ allow:orders__get_\*@user:alice \(taint approve\)",
                            page.inner_text(".msg.ok"))
        row = page.locator("tr", has_text="orders__get_*").inner_text().split("\t")
        assert row[2:8] == ["allow", "orders__get_*", "destructive", "default (destructive)", "approve", "1"]
        add.locator("input[name=pattern]").fill("orders__cancel_*")
        add.locator("select[name=taint]").select_option("approve")
        add.locator("input[name=deny]").check()
        add.locator("button[type=submit]").click()
        assert "a deny grant refuses every call; set taint on an allow grant" in page.inner_text(".msg.err")
        assert page.locator("tr", has_text="orders__cancel_*").count() == 0
        add.locator("input[name=pattern]").fill("orders__cancel_*")
        add.locator("select[name=taint]").select_option("")
        add.locator("input[name=deny]").check()
        add.locator("button[type=submit]").click()
        row = page.locator("tr", has_text="orders__cancel_*").inner_text().split("\t")
        assert row[2:8] == ["deny", "orders__cancel_*", "-", "-", "-", "1"]
        shot(page, "grants-taint")

        # -- post-redirect-get for a new key; roles; disable and delete a user ----------------------------
        page.goto(base + "/admin/users")
        csrf = page.input_value("input[name=csrf]")
        cookies = {c["name"]: c["value"] for c in page.context.cookies()}
        posted = httpx2.post(base + "/admin/keys", data={"csrf": csrf, "user": "alice", "label": "prg"},
                             cookies=cookies, follow_redirects=False)
        assert (posted.status_code, posted.headers["location"]) == (303, "/admin/users")
        assert "th_" not in posted.text
        page.goto(base + "/admin/users")  # the redirect's target shows the key once ...
        assert page.input_value("#new-key").startswith("th_")
        page.reload()  # ... and a refresh shows nothing and creates nothing
        assert page.locator("#new-key").count() == 0
        assert page.locator("tr", has_text="prg").count() == 1
        page.fill("#add-role input[name=name]", "auditor")
        page.fill("#add-role input[name=description]", "reads the audit")
        page.click("#add-role button")
        assert page.inner_text(".msg.ok") == "added role auditor"
        assert page.locator("tr", has_text="reads the audit").inner_text().split("\t")[0] == "auditor"
        page.fill("form[action='/admin/users'] input[name=name]", "dave")
        page.click("form[action='/admin/users'] button")
        page.locator("tr", has_text="dave").first.locator("form[action='/admin/keys'] button").click()
        page.goto(base + "/admin/users")
        dave = page.locator("tr", has_text="dave").first
        assert dave.inner_text().split("\t")[1:5] == ["enabled", "-", "0", "1"]
        dave.locator("form[action$='/disable'] input[name=reason]").fill("left the team")
        dave.locator("form[action$='/disable'] button").click()
        assert page.inner_text(".msg.ok") == ("disabled dave: their keys are refused and their grants give nothing "
                                              "until enabled")
        state, *_, keys = page.locator("tr", has_text="dave").first.inner_text().split("\t")[1:5]
        assert re.fullmatch(r"disabled by root \S+ \S+: left the team", state) and keys == "1"  # keys are kept
        page.locator("tr", has_text="dave").first.locator("form[action$='/enable'] button").click()
        assert page.inner_text(".msg.ok") == "enabled dave"
        assert page.locator("tr", has_text="dave").first.inner_text().split("\t")[1] == "enabled"
        page.locator("tr", has_text="dave").first.locator("form[action$='/delete'] button").click()
        assert page.inner_text(".msg.ok") == "deleted user dave (with its keys, grants, role memberships and approvals)"
        assert page.locator("tr", has_text="dave").count() == 0
        shot(page, "users-roles")
        page.goto(base + "/admin/audit?action=admin&user=root")
        acts = _cells(page, 7)
        assert acts[:5] == ["user.remove", "user.enable", "user.disable", "key.create", "user.add"]

        # -- a styled 404, in the layout when logged in ------------------------------------------------
        response = page.goto(base + "/admin/no/such/page")
        assert response is not None and response.status == 404
        assert page.locator("header nav a").count() == 8 and "/admin/no/such/page" in page.inner_text(".missing")
        shot(page, "not-found")
        response = page.goto(base + "/admin/tools/no__such_tool")
        assert response is not None and response.status == 404 and page.locator(".missing").count() == 1
        anonymous = httpx2.get(base + "/admin/no/such/page")
        assert anonymous.status_code == 404 and "<nav>" not in anonymous.text and "Log in" in anonymous.text

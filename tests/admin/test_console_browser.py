"""The web console in a real headless Chromium (Debian's package, driven by Playwright):
log in, approve a pending call (the waiting call then runs), accept a changed tool's pin,
create a user, key and grant and see the grant apply. Screenshots of every page are saved under
``test-artifacts/console/`` (the path is printed)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import httpx2
import pytest
from playwright.sync_api import Page, sync_playwright

from tests.admin.support import Serve, config, mcp_client, people

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def call(url: str, key: str, name: str, arguments: dict) -> tuple[bool, str, dict]:
    """One MCP tools/call as ``key``'s user: ``(is_error, text, toolhost error meta)``."""

    async def run() -> tuple[bool, str, dict]:
        with anyio.fail_after(60):
            async with mcp_client(url, key) as c:
                r = await c.call_tool("call_tool", {"name": name, "arguments": arguments})
                text = "".join(getattr(b, "text", "") for b in r.content)
                return r.is_error, text, (r.meta or {}).get("toolhost/error", {})

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's event loop
        return pool.submit(anyio.run, run).result(timeout=90)


def shot(page: Page, name: str) -> None:
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")


@pytest.fixture
def browser_page():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert Path(CHROMIUM).exists(), "run scripts/test.sh: scripts/setup.d/30-chromium.sh installs Debian's chromium"
    with sync_playwright() as p:
        # Playwright gives every launch a new empty profile (its own --user-data-dir).
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def test_operator_runs_the_team_from_the_browser(tmp_path, browser_page: Page) -> None:
    page = browser_page
    data = tmp_path / "data"
    keys = people(data)
    with Serve(config(tmp_path), data) as serve:
        base = serve.url
        # -- log in ----------------------------------------------------------------------
        page.goto(base + "/admin")
        assert page.url == base + "/admin/login"
        page.fill("#key", keys["alice"])
        page.click("button[type=submit]")
        assert "user alice has no 'admin' role" in page.inner_text(".msg.err")
        shot(page, "login")
        page.fill("#key", keys["root"])
        page.click("button[type=submit]")
        assert page.url == base + "/admin/servers"
        rows = page.locator("tbody tr").all_inner_texts()
        assert [r.split("\t")[:4] for r in rows] == [["orders", "stdio", "connected", "3"],
                                                     ["rug", "stdio", "connected", "2"]]
        assert keys["root"] not in page.content()
        shot(page, "servers")
        page.goto(base + "/admin/tools")
        cancel = page.locator("tr", has_text="orders__cancel_order").inner_text().split("\t")
        assert cancel[:6] == ["orders__cancel_order", "orders", "destructive", "-", "trusted", "yes"]
        shot(page, "tools")

        # -- approve a pending call; the waiting call then runs ----------------------------
        is_error, _text, err = call(base, keys["alice"], "orders__cancel_order", {"order_id": "A1002"})
        assert is_error and err["code"] == "approval_required"
        page.goto(base + "/admin/approvals")
        row = page.locator("tr", has_text=err["approval_id"])
        assert row.inner_text().split("\t")[1:4] == ["alice", "orders__cancel_order", "pending"]
        shot(page, "approvals")
        page.goto(base + f"/admin/approvals/{err['approval_id']}")
        assert '"order_id": "A1002"' in page.inner_text("pre")
        shot(page, "approval")
        page.click("form[action$='/approve'] button")
        assert page.inner_text(".msg.ok") == f"approved {err['approval_id']}: alice → orders__cancel_order"
        is_error, text, _ = call(base, keys["alice"], "orders__cancel_order", {"order_id": "A1002"})
        assert not is_error and "cancel" in text.lower()

        # -- a changed tool is held; accept its pin ----------------------------------------
        start = len(serve.lines)
        is_error, _text, _ = call(base, keys["alice"], "rug__daily_quote", {})  # the rug pull happens now
        assert not is_error
        serve.wait_for(r"tools\.held.*rug__daily_quote", 60, start)
        is_error, _text, err = call(base, keys["alice"], "rug__daily_quote", {})
        assert is_error and err["code"] == "unknown_tool"  # held: refused like an unknown tool
        page.goto(base + "/admin/tools")  # a held definition is not shown as available, and says what to run
        assert page.locator("tr", has_text="rug__daily_quote").inner_text().split("\t")[4:6] == [
            "changed", ("no definition held: review `toolhost pins diff rug__daily_quote`, then `toolhost pins "
                        "accept rug__daily_quote --hash HASH`")]
        page.goto(base + "/admin/pins")
        assert page.locator("tr", has_text="rug__daily_quote").inner_text().split("\t")[2:4] == [
            "changed", "new_finding, schema_widened, cosmetic"]  # the drift class, as `pins diff` shows it
        shot(page, "pins")
        page.click("a:text('rug__daily_quote')")
        assert "+" in page.inner_text("pre.diff")
        shot(page, "pin-diff")
        page.click("form[action$='/accept'] button")
        assert page.inner_text(".msg.ok").startswith("accepted rug__daily_quote (")
        is_error, _text, _ = call(base, keys["alice"], "rug__daily_quote", {})
        assert not is_error

        # -- a new user, a key shown once, a grant that applies at once ----------------------
        page.goto(base + "/admin/users")
        page.fill("input[name=name]", "bob")
        page.click("form[action='/admin/users'] button")
        assert page.inner_text(".msg.ok") == "added user bob"
        page.locator("tr", has_text="bob").locator("input[name=label]").fill("ci")
        page.locator("tr", has_text="bob").locator("form[action='/admin/keys'] button").click()
        bob_key = page.input_value("#new-key")
        assert bob_key.startswith("th_") and page.url == base + "/admin/users"  # post-redirect-get
        shot(page, "users")
        page.reload()  # a refresh neither shows the key again nor creates another one
        assert bob_key not in page.content() and page.locator("#new-key").count() == 0
        # columns: user, state, roles, grants, active keys
        assert page.locator("tr", has_text="bob").first.inner_text().split("\t")[4] == "1"
        is_error, _text, err = call(base, bob_key, "orders__get_order", {"order_id": "A1001"})
        assert is_error and err["code"] == "unknown_tool"
        page.goto(base + "/admin/grants")
        add = page.locator("form[action='/admin/grants']")
        add.locator("select[name=subject]").select_option("bob")
        add.locator("input[name=pattern]").fill("orders__get_order")
        add.locator("select[name=max_risk]").select_option("read")
        add.locator("button[type=submit]").click()
        assert page.inner_text(".msg.ok").startswith("added grant #")
        assert page.locator("tr", has_text="user:bob").inner_text().split("\t")[1:5] == [
            "user:bob", "allow", "orders__get_order", "read"]
        shot(page, "grants")
        is_error, text, _ = call(base, bob_key, "orders__get_order", {"order_id": "A1001"})
        assert not is_error and "A1001" in text

        # -- audit and search playground ------------------------------------------------------
        page.goto(base + "/admin/audit?action=approval")
        audit_rows = [r.split("\t") for r in page.locator("tbody tr").all_inner_texts()]
        assert [(r[2], r[3], r[4], r[5], r[6], r[8]) for r in audit_rows] == [
            ("alice", "approval", "orders__cancel_order", "allow", "approved", "root")]
        shot(page, "audit")
        page.goto(base + "/admin/search?q=cancel+order&user=bob")
        assert page.locator("#hits tbody tr").all_inner_texts()[0].split("\t")[1] == "orders__get_order"
        page.goto(base + "/admin/search?q=cancel+order")
        assert page.locator("#hits tbody tr").first.inner_text().split("\t")[1] == "orders__cancel_order"
        shot(page, "search")

        # -- CSRF: a state change without the session's token is refused --------------------------
        cookies = {c["name"]: c["value"] for c in page.context.cookies()}
        forged = httpx2.post(base + "/admin/users", data={"name": "mallory"}, cookies=cookies)
        assert forged.status_code == 403 and "CSRF" in forged.text
        page.click(".logout button")
        assert page.url == base + "/admin/login"

"""A console session ends when its rights end: every console request re-validates the session's
user, role and key (as the admin API validates a bearer key). A revoked key, a removed admin role,
a disabled or a deleted user sends the next page or action back to the log-in page and changes nothing; the local
admin token's session holds. Console pages carry ``X-Content-Type-Options: nosniff``."""

from __future__ import annotations

import re

import httpx2
import pytest
from playwright.sync_api import Page

from host.access import AccessControl
from tests.admin.support import Serve, config
from tests.admin.test_console_browser import browser_page  # noqa: F401 - the fixture


def _people(data_dir) -> dict[str, str]:
    a = AccessControl.open(data_dir)
    try:
        a.roles.add("admin", "operators")
        keys = {}
        for name in ("root", "ann", "ben", "cid", "dan"):
            a.users.add(name)
            a.users.assign_role(name, "admin")
            keys[name] = a.keys.create(name)[1]
        return keys
    finally:
        a.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("console-sessions")
    data = tmp / "data"
    keys = _people(data)
    with Serve(config(tmp), data) as serve:
        yield serve, keys


def _login(base: str, key: str) -> httpx2.Client:
    c = httpx2.Client(base_url=base, timeout=30)
    r = c.post("/admin/login", data={"key": key})
    assert r.status_code == 303 and r.headers["location"] == "/admin/servers"
    return c


def _csrf(c: httpx2.Client) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', c.get("/admin/users").text).group(1)


def _ended(c: httpx2.Client, csrf: str, serve) -> None:
    """Every page and action of this session now answers the log-in page; minting a key does nothing."""
    before = len(serve.api().get("/keys").json()["keys"])
    for path in ("/admin/servers", "/admin/users", "/admin/audit"):
        r = c.get(path)
        assert (r.status_code, r.headers.get("location")) == (303, "/admin/login"), path
    r = c.post("/admin/keys", data={"csrf": csrf, "user": "root", "label": "stolen"})
    assert (r.status_code, r.headers.get("location")) == (303, "/admin/login")
    r = c.post("/admin/roles/assign", data={"csrf": csrf, "user": "root", "role": "admin"})
    assert r.status_code == 303 and r.headers.get("location") == "/admin/login"
    assert len(serve.api().get("/keys").json()["keys"]) == before


@pytest.mark.parametrize(("who", "take_away"), [
    ("ann", lambda api: api.post("/keys/revoke", json={"user": "ann", "all": True})),
    ("ben", lambda api: api.delete("/roles/admin/members/ben")),
    ("cid", lambda api: api.delete("/users/cid")),
    ("dan", lambda api: api.post("/users/dan/disable", json={"reason": "on leave"})),
])
def test_a_session_ends_when_its_key_role_or_user_goes(served, who, take_away) -> None:
    serve, keys = served
    c = _login(serve.url, keys[who])
    try:
        assert c.get("/admin/users").status_code == 200
        csrf = _csrf(c)
        with serve.api() as api:
            assert take_away(api).status_code == 200
        _ended(c, csrf, serve)
        relog = c.post("/admin/login", data={"key": keys[who]})
        assert relog.status_code == 401
        if who == "dan":  # the log-in page says why
            assert "user dan is disabled by local-admin since " in relog.text and "(on leave)" in relog.text
    finally:
        c.close()


def test_other_sessions_and_the_local_token_session_hold(served) -> None:
    serve, keys = served
    root = _login(serve.url, keys["root"])
    local = _login(serve.url, serve.token)
    try:
        for c in (root, local):
            page = c.get("/admin/users")
            assert page.status_code == 200
            assert page.headers["x-content-type-options"] == "nosniff"
    finally:
        root.close()
        local.close()


def test_the_browser_is_sent_to_log_in_once_its_key_is_revoked(tmp_path, browser_page: Page) -> None:  # noqa: F811
    page = browser_page
    data = tmp_path / "data"
    keys = _people(data)
    with Serve(config(tmp_path), data) as serve:
        page.goto(serve.url + "/admin/login")
        page.fill("#key", keys["root"])
        page.click("button[type=submit]")
        assert page.url == serve.url + "/admin/servers"
        page.goto(serve.url + "/admin/users")
        assert page.locator("h1").inner_text().startswith("Users")
        with serve.api() as api:
            assert api.post("/keys/revoke", json={"user": "root", "all": True}).status_code == 200
        page.locator("tr", has_text="ann").locator("form[action='/admin/keys'] button").click()
        assert page.url == serve.url + "/admin/login"  # the mint was refused: back to log in
        page.goto(serve.url + "/admin/users")
        assert page.url == serve.url + "/admin/login"
        with serve.api() as api:
            assert [k["label"] for k in api.get("/keys", params={"user": "ann"}).json()["keys"]] == [""]

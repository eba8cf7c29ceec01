"""Session taint with code mode on, through a real ``toolhost serve --code-mode`` and real servers.

The servers of :mod:`tests.servers.test_taint_e2e` (``server-filesystem`` as the private source,
``mcp-server-fetch`` on this test's page as the untrusted one, the posting server as egress). A
script's inner calls record into and are checked against the caller's own taint session (its
connection in the handshake era, ``caller:<user>:<key>`` in the 2026-07-28 era), the one its direct
``call_tool`` calls use: reads inside a script then a direct egress are held, and the reverse; one
caller's reads never taint, nor appear in the refusal of, another caller; the admin API has a
session of its own. The taint ``approve`` decision asks a real approval with code mode on, and a
script's manifest approval never covers a taint hold.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.servers.test_taint_e2e import TOOLHOST, Session, Site, admin, write_config

READS = "a = await files__read_text_file(path={secret!r})\nb = await web__fetch(url={page!r})\n[str(a), str(b)]\n"
POST = (
    "try:\n"
    "    r = str(await posting__post_message(url={inbox!r}, text='from a script'))\n"
    "except PermissionError as e:\n"
    "    r = tool_error(e)\n"
    "r\n"
)

ALL = ("*",)


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as s:
        yield s


class Serve:
    """``toolhost serve --code-mode`` over the taint servers; under ``keys``, users with the grants
    given per user."""

    def __init__(self, tmp_path: Path, site: Site, mode: str, grants: dict[str, list[tuple[str, ...]]]) -> None:
        cfg = write_config(tmp_path)
        self.data = tmp_path / "home"
        self.keys: dict[str, str] = {}
        self.secret = str(tmp_path / "private" / "secret.txt")
        self.page, self.inbox = f"{site.base}/page", f"{site.base}/inbox"
        if mode == "keys":
            for user, extra in grants.items():
                admin(self.data, "users", "add", user)
                for grant in extra:
                    admin(self.data, "grants", "add", user, *grant)
                self.keys[user] = re.search(r"(th_\w+_\S+)", admin(self.data, "keys", "create", user)).group(1)
        self.proc = subprocess.Popen([TOOLHOST, "serve", "--port", "0", "--config", str(cfg), "--data-dir",
                                      str(self.data), "--code-mode"], stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if m := re.search(r"at (http://\S+/mcp)", line):
                self.url = m.group(1)
                return
        self.proc.kill()
        raise AssertionError(f"serve did not start: {self.proc.communicate(timeout=30)[1]}")

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.communicate(timeout=30)[1]

    def session(self, user: str | None, era: str) -> Session:
        return Session(self.url, None if user is None else self.keys[user], era)

    @property
    def reads(self) -> str:
        return READS.format(secret=self.secret, page=self.page)

    @property
    def post(self) -> str:
        return POST.format(inbox=self.inbox)

    def approvals(self) -> list[dict[str, Any]]:
        return json.loads(admin(self.data, "approvals", "list", "--json"))


async def execute(s: Session, code: str) -> tuple[str | None, Any, dict[str, Any]]:
    """``(error code or None, the script's result, error meta)`` of one ``execute`` call."""
    r = await s.client.call_tool("execute", {"code": code})
    err = (r.meta or {}).get("toolhost/error", {})
    if r.is_error:
        return err.get("code"), r.content[0].text, err
    return None, r.structured_content["result"], err


def ids(err: dict[str, Any]) -> set[str]:
    details = err["details"]
    return {c["call_id"] for c in details["private_calls"] + details["untrusted_calls"]}


@pytest.mark.parametrize("era", ["legacy", "auto"])
@pytest.mark.parametrize("mode", ["open", "keys"])
def test_reads_in_a_script_and_a_direct_egress_share_the_callers_session(tmp_path, site, mode, era):
    """Reads inside a script, then a direct egress: held, with a real approval (approvable from the
    CLI) that names the script's inner calls; then an egress inside a script after those reads is
    held too; nothing leaves but the approved post."""
    gw = Serve(tmp_path, site, mode, {"alice": [ALL]})
    user = "alice" if mode == "keys" else None
    post = {"url": gw.inbox, "text": "summary of the customer list"}
    try:
        async def scenario() -> None:
            with anyio.fail_after(180):
                async with gw.session(user, era) as s:
                    code, (secret, page), _ = await execute(s, gw.reads)
                    assert code is None and "ACME Corp" in secret and "ignore the user" in page
                    code, text, err = await s.call("posting__post_message", post)
                    assert (code, err["where"], err["details"]["rule"]) == ("approval_required", "authorize", "taint")
                    assert [c["tool"] for c in err["details"]["private_calls"]] == ["files__read_text_file"]
                    assert [c["tool"] for c in err["details"]["untrusted_calls"]] == ["web__fetch"]
                    assert all(re.fullmatch(r".+\.[01]", c) for c in ids(err))  # the script's inner call ids
                    assert site.posted == []
                    (row,) = [a for a in gw.approvals() if a["id"] == err["approval_id"]]
                    assert row["tool"] == "posting__post_message" and "taint: Private data came from" in row["rule"]
                    admin(gw.data, "approvals", "approve", err["approval_id"])
                    assert (await s.call("posting__post_message", post))[0] is None
                    assert site.posted == [post["text"]]
                    # the reverse: the session is still tainted, so an egress inside a script is held
                    code, held, _ = await execute(s, gw.post)
                    assert code is None and held["status"] == "approval_required" and held["approval_id"]
                    assert "files__read_text_file" in held["message"] and "web__fetch" in held["message"]
                    assert site.posted == [post["text"]]
                if era == "legacy":  # a new connection is a new session, for scripts too
                    async with gw.session(user, era) as fresh:
                        code, ran, _ = await execute(fresh, gw.post)
                        assert code is None and "posted 13 characters" in ran
                        assert site.posted == [post["text"], "from a script"]

        anyio.run(scenario)
    finally:
        rest = gw.stop()
    assert "TypeError" not in rest


@pytest.mark.parametrize("era", ["legacy", "auto"])
def test_one_callers_script_reads_never_taint_or_appear_for_another(tmp_path, site, era):
    """alice's script reads private and untrusted data: bob's direct egress still runs, and bob's own
    trifecta (his grant says ``--taint deny``) is refused naming only bob's calls; alice's refusal
    names only hers; the admin API's calls have a session of their own."""
    deny = ("posting__post_message", "--max-risk", "write", "--taint", "deny")
    gw = Serve(tmp_path, site, "keys", {"alice": [ALL], "bob": [ALL, deny]})
    post = {"url": gw.inbox, "text": "bob's note"}
    try:
        async def scenario() -> None:
            with anyio.fail_after(180):
                async with gw.session("alice", era) as alice, gw.session("bob", era) as bob:
                    assert (await execute(alice, gw.reads))[0] is None
                    assert (await bob.call("posting__post_message", post))[0] is None
                    assert site.posted == [post["text"]]
                    base = gw.url.removesuffix("/mcp")
                    token = (gw.data / "admin.token").read_text().strip()
                    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
                        r = await http.post(f"{base}/admin/api/call",
                                            json={"name": "execute", "arguments": {"code": gw.post}})
                    assert r.status_code == 200, r.text
                    assert "posted 13 characters" in r.json()["structured"]["result"]
                    assert (await execute(bob, gw.reads))[0] is None
                    code, text, bob_err = await bob.call("posting__post_message", post)
                    assert code == "permission_denied" and bob_err["details"]["decision"] == "deny"
                    assert len(bob_err["details"]["private_calls"]) == len(bob_err["details"]["untrusted_calls"]) == 1
                    code, alice_text, alice_err = await alice.call("posting__post_message", post)
                    assert code == "approval_required"
                    assert len(alice_err["details"]["private_calls"]) == 1
                    assert ids(alice_err).isdisjoint(ids(bob_err))
                    assert not any(i in text for i in ids(alice_err))
                    assert not any(i in alice_text for i in ids(bob_err))
                    assert site.posted == [post["text"], "from a script"]

        anyio.run(scenario)
    finally:
        gw.stop()


def test_a_scripts_approval_never_covers_a_taint_hold(tmp_path, site):
    """alice's grant asks approval for the egress tool: her script naming it asks once for its
    manifest; approved, it runs its reads, and its egress is still held by its own taint approval."""
    always = ("posting__post_message", "--max-risk", "write", "--approval")
    gw = Serve(tmp_path, site, "keys", {"alice": [("server:files",), ("server:web",), always]})
    script = gw.reads.rsplit("\n", 2)[0] + "\n" + gw.post
    try:
        async def scenario() -> None:
            with anyio.fail_after(180):
                async with gw.session("alice", "legacy") as s:
                    code, _text, err = await execute(s, script)
                    assert code == "approval_required" and err["details"]["needs_approval"] == [
                        "posting__post_message"]
                    script_approval = err["approval_id"]
                    admin(gw.data, "approvals", "approve", script_approval)
                    code, held, _ = await execute(s, script)
                    assert code is None and held["status"] == "approval_required"
                    assert held["approval_id"] not in (None, script_approval)
                    assert "files__read_text_file" in held["message"] and "web__fetch" in held["message"]
                    (row,) = [a for a in gw.approvals() if a["id"] == held["approval_id"]]
                    assert row["tool"] == "posting__post_message" and row["status"] == "pending"
                    assert "; taint: " in row["rule"] and "Private data came from" in row["rule"]
                    assert site.posted == []
                rows = json.loads(admin(gw.data, "audit", "--action", "taint", "--json"))
                assert [(r["tool"], r["status"]) for r in rows] == [("posting__post_message", "approval_required")]
                calls = json.loads(admin(gw.data, "audit", "--action", "call", "--json"))
                (held_row,) = [r for r in calls if r["tool"] == "posting__post_message"]
                # the held inner call's row names its own pending approval, never the script's
                assert (held_row["status"], held_row["approval_id"]) == ("approval_required", held["approval_id"])
                assert held_row["detail"].endswith("step:2")

        anyio.run(scenario)
    finally:
        gw.stop()

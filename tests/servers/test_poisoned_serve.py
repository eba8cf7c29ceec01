"""Held poisoned prompts/resources/instructions and annotation conflicts through real ``toolhost
serve`` processes, under every access mode and both protocol eras.

Upstream ``tests/peers/poisoned_server.py`` as server ``bad``. Serves (started at once): open access,
API keys (alice: ``server:bad``; bob: no grant) and ``--auth off``; the local admin goes through the
open and the keys serve (admin API token, and the ``toolhost tools`` CLI).

* Every caller who may see server ``bad`` gets only its clean prompt/resource/template listed; a
  get/read of a held one answers ``-32602`` naming the ``trust_definitions`` entry; bob (no grant)
  gets the same answer as for an unknown name; no client gets the upstream's poisoned
  ``instructions``.
* ``send_report`` claims ``readOnlyHint: true`` but its name says it sends: it stays egress, so after
  ``list_notes`` (private) and ``fetch_page`` (untrusted) it is held for approval and nothing is sent.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from host.access import AccessControl
from tests.peers.poisoned_server import INJECTION
from tests.servers.serves import running
from tests.servers.test_access_matrix import TOOLHOST, Gateway, _env

pytestmark = pytest.mark.anyio

PEER = Path(__file__).resolve().parents[2] / "tests" / "peers" / "poisoned_server.py"
MODES = ("open", "grant", "nogrant", "off")  # grant/nogrant: alice/bob on the keys serve
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
STEP_SECONDS = 60
CONFLICT = ("readOnlyHint true contradicts name cue 'send': still egress; if the tool really sends nothing, set "
            "toolhost.flow.tools.send_report.egress false (or toolhost.risk.send_report read) in the server's config")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _gateway(root: Path, mode: str) -> Gateway:
    home = root / mode
    data = home / "data"
    data.mkdir(parents=True)
    (home / "config.json").write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "bad": {"command": sys.executable, "args": [str(PEER), "--journal", str(home / "sent.log")]}}}))
    keys: dict[str, str] = {}
    if mode == "keys":
        access = AccessControl.open(data)
        try:
            access.users.add("alice")
            access.grants.add("alice", "server:bad")
            access.users.add("bob")
            keys = {"grant": access.keys.create("alice")[1], "nogrant": access.keys.create("bob")[1]}
        finally:
            access.close()
    args = ["serve", "--port", "0", "--config", str(home / "config.json"), "--data-dir", str(data)]
    return Gateway((mode,), home, args + (["--auth", "off"] if mode == "off" else []), keys=keys)


@pytest.fixture(scope="module")
async def serves(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Gateway]]:
    root = tmp_path_factory.mktemp("poisoned")
    async with running({mode: _gateway(root, mode) for mode in ("open", "keys", "off")}) as gws:
        yield gws


def _serve_of(serves: dict[str, Gateway], mode: str) -> tuple[Gateway, dict[str, str]]:
    gw = serves["keys" if mode in ("grant", "nogrant") else mode]
    key = gw.keys.get(mode)
    return gw, {"Authorization": f"Bearer {key}"} if key else {}


async def _error(op: Any) -> MCPError:
    with pytest.raises(MCPError) as info:
        await op
    return info.value


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("mode", MODES)
async def test_held_items_under_every_access_mode(serves, mode: str, era: str) -> None:
    gw, headers = _serve_of(serves, mode)
    with anyio.fail_after(STEP_SECONDS):
        async with httpx2.AsyncClient(headers=headers, timeout=STEP_SECONDS) as http, \
                Client(streamable_http_client(gw.url, http_client=http), mode=era) as c:
            assert c.protocol_version == ERAS[era]
            prompts = [p.name for p in (await c.list_prompts()).prompts]
            resources = [str(r.uri) for r in (await c.list_resources()).resources]
            templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
            summarize = await _error(c.get_prompt("bad__summarize", {"text": "x"}))
            news = await _error(c.read_resource("toolhost://bad/page://news"))
            page = await _error(c.read_resource("toolhost://bad/page://home"))
            instructions = c.instructions or ""
    assert "Ignore all previous" not in instructions and INJECTION not in instructions
    if mode == "nogrant":  # hidden: answered exactly like unknown names
        assert (prompts, resources, templates) == ([], [], [])
        assert (summarize.code, summarize.message) == (-32602, "Unknown prompt: bad__summarize")
        assert (news.code, news.message) == (-32002, "Resource not found: toolhost://bad/page://news")
        assert (page.code, page.message) == (-32002, "Resource not found: toolhost://bad/page://home")
        return
    assert prompts == ["bad__greet"]
    assert resources == ["toolhost://bad/memo://readme"]
    assert templates == ["toolhost://bad/memo://notes/{id}"]
    assert (summarize.code, summarize.data) == (-32602, {"held": True, "server": "bad", "trust": "prompt:summarize"})
    assert summarize.message.startswith("toolhost: prompt bad__summarize of server 'bad' is held: its definition "
                                        "looks poisoned (instruction '<IMPORTANT>' in description; ")
    assert (news.code, news.data["trust"]) == (-32602, "resource:page://news")
    assert (page.code, page.data["trust"]) == (-32602, "template:page://{slug}")


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("mode", ("open", "grant", "off"))
async def test_a_sender_claiming_read_only_stays_egress(serves, mode: str, era: str) -> None:
    gw, headers = _serve_of(serves, mode)

    async def call(c: Client, name: str, args: dict[str, Any]) -> tuple[str | None, str]:
        r = await c.call_tool("call_tool", {"name": name, "arguments": args})
        return ((r.meta or {}).get("toolhost/error", {}).get("code") if r.is_error else None), r.content[0].text

    secret = f"SECRET-{mode}-{era}"
    with anyio.fail_after(STEP_SECONDS):
        async with httpx2.AsyncClient(headers=headers, timeout=STEP_SECONDS) as http, \
                Client(streamable_http_client(gw.url, http_client=http), mode=era) as c:
            first = await call(c, "bad__list_notes", {})
            second = await call(c, "bad__fetch_page", {})
            code, text = await call(c, "bad__send_report", {"text": secret})
    assert (first[0], second[0]) == (None, None) and "salary review" in first[1]
    assert code == "approval_required"
    assert "bad__send_report" in text and "bad__list_notes" in text and "bad__fetch_page" in text
    sent = gw.home / "sent.log"
    assert secret not in (sent.read_text() if sent.exists() else "")


@pytest.mark.parametrize("serve", ["open", "keys"])
async def test_the_local_admin_sees_the_conflict(serves, serve: str) -> None:
    gw = serves[serve]
    base = gw.url.removesuffix("/mcp") + "/admin/api"
    with anyio.fail_after(STEP_SECONDS):
        async with httpx2.AsyncClient(base_url=base, timeout=STEP_SECONDS,
                                      headers={"Authorization": f"Bearer {gw.admin_token}"}) as api:
            visible = (await api.get("/tools/visible")).json()
        table = await anyio.run_process([TOOLHOST, "tools", "--data-dir", str(gw.home / "data"),
                                         "--config", str(gw.home / "config.json")], check=False, env=_env())
    flow = {t["name"]: t["flow"] for t in visible["tools"]}
    assert flow["bad__send_report"]["labels"] == ["egress"]
    assert flow["bad__send_report"]["reasons"]["egress"] == (
        "name cue 'send', although the server claims readOnlyHint true")
    assert flow["bad__send_report"]["conflicts"] == [CONFLICT]
    assert flow["bad__fetch_page"]["labels"] == ["untrusted_source"]
    assert flow["bad__fetch_page"]["short"] == "untrusted (hint conflict)"
    assert flow["bad__list_notes"]["labels"] == ["private_source"]
    assert table.returncode == 0, table.stderr.decode()
    row = next(line for line in table.stdout.decode().splitlines() if "bad__send_report" in line)
    assert "egress (hint conflict)" in row


@pytest.mark.parametrize("serve", ["open", "keys", "off"])
async def test_each_hold_is_a_console_event_naming_server_and_findings(serves, serve: str) -> None:
    events = [line for line in serves[serve].stderr if "definitions.held" in line]
    assert len(events) == 5, "\n".join(serves[serve].stderr[-40:])
    summarize = next(line for line in events if "bad: prompt summarize held" in line)
    assert "looks poisoned (instruction '<IMPORTANT>' in description; " in summarize
    assert any("bad: instructions held, looks poisoned" in line for line in events)


@pytest.mark.parametrize("serve", ["open", "keys"])
async def test_each_hold_is_an_audit_row_with_a_store(serves, serve: str) -> None:
    gw = serves[serve]
    with anyio.fail_after(STEP_SECONDS):
        done = await anyio.run_process([TOOLHOST, "audit", "--action", "pin", "--json", "--data-dir",
                                        str(gw.home / "data")], check=False, env=_env())
    assert done.returncode == 0, done.stderr.decode()
    rows = [r for r in json.loads(done.stdout) if r["rule"] == "catalog:suspicious"]
    assert sorted(r["tool"] for r in rows) == ["bad:instructions", "bad:prompt:review", "bad:prompt:summarize",
                                               "bad:resource:page://news", "bad:template:page://{slug}"]
    assert {(r["decision"], r["status"]) for r in rows} == {("deny", "held")}
    summarize = next(r for r in rows if r["tool"] == "bad:prompt:summarize")
    assert summarize["detail"].startswith("held by the definition scanner (instruction '<IMPORTANT>' in description; ")

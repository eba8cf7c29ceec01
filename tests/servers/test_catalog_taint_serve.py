"""Prompts, resources and sampling meet session taint, and catalog reads are audited, through real
``toolhost serve`` processes (both protocol eras; open access, API keys and ``--auth off``).

Upstreams (``tests/peers/flow_peer.py``): ``files`` (a ``file://`` resource: private), ``web`` (a
page resource and a prompt carrying an injection: untrusted, like its ``fetch_page`` tool; and
``helper``, which asks the client's model with ``includeContext: "allServers"``) and ``out``
(``post_message``: egress). The rule is ``deny``, so a held call answers at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import count
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CreateMessageResult, TextContent

from host.access import AccessControl
from tests.servers.serves import running
from tests.servers.test_access_matrix import CLIENT_MODE, LEGACY, MODERN, TOOLHOST, Gateway, _env

pytestmark = pytest.mark.anyio

PEER = str(Path(__file__).resolve().parents[1] / "peers" / "flow_peer.py")
PLAN = "toolhost://files/file:///srv/notes/plan.txt"
NEWS = "toolhost://web/page://news"
SECRET_URI = "toolhost://web/page://nope?api_key=sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
ERAS = (LEGACY, MODERN)
_ids = count()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _gateway(root: Path, mode: str) -> Gateway:
    home = root / mode
    data = home / "data"
    data.mkdir(parents=True)
    servers = {kind: {"command": sys.executable, "args": [PEER, "--kind", kind]} for kind in ("files", "web", "out")}
    servers["oldweb"] = {**servers["web"], "toolhost": {"protocol": "legacy"}}  # a handshake-era upstream
    config = {"toolhost": {"connect_timeout_seconds": 30, "taint": {"decision": "deny"}}, "mcpServers": servers}
    (home / "config.json").write_text(json.dumps(config))
    keys: dict[str, str] = {}
    if mode in ("keys", "off"):
        access = AccessControl.open(data)
        try:
            access.users.add("alice")
            access.users.add("bob")
            for pattern in ("server:files", "server:web", "server:out"):
                access.grants.add("alice", pattern)
            access.grants.add("bob", "server:out")
            keys = {user: access.keys.create(user)[1] for user in ("alice", "bob")}
        finally:
            access.close()
    extra = ["--auth", "off"] if mode == "off" else []
    return Gateway((mode,), home, ["serve", "--config", str(home / "config.json"), "--data-dir", str(data),
                                   "--port", "0", *extra], keys=keys if mode == "keys" else {})


@pytest.fixture(scope="module")
async def serves(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Gateway]]:
    root = tmp_path_factory.mktemp("catalog-taint")
    async with running({mode: _gateway(root, mode) for mode in ("open", "keys", "off")}) as gws:
        yield gws


class Session:
    """One conversation: a client (one connection) and, for a stateless client, its own
    ``_meta["toolhost/session"]``; records what its model was asked to sample."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.meta = {"toolhost/session": f"conv-{next(_ids)}"}
        self.sampled: list[Any] = []

    async def read(self, uri: str) -> str:
        with anyio.fail_after(40):
            r = await self.client.read_resource(uri, meta=self.meta)
        return r.contents[0].text

    async def prompt(self, name: str) -> str:
        with anyio.fail_after(40):
            r = await self.client.get_prompt(name, meta=self.meta)
        return r.messages[0].content.text

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        with anyio.fail_after(40):
            r = await self.client.call_tool("call_tool", {"name": name, "arguments": arguments}, meta=self.meta)
        return bool(r.is_error), "".join(b.text for b in r.content if getattr(b, "text", None))


@asynccontextmanager
async def session(gw: Gateway, era: str, key: str | None = None) -> AsyncIterator[Session]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    box: list[Session] = []

    async def sample(_ctx: Any, params: Any) -> CreateMessageResult:
        box[0].sampled.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="(notes)"), model="m")

    async with httpx2.AsyncClient(headers=headers, timeout=40) as http, \
            Client(streamable_http_client(gw.url, http_client=http), mode=CLIENT_MODE[era],
                   sampling_callback=sample) as c:
        assert c.protocol_version == era
        box.append(Session(c))
        yield box[0]


def toolhost(gw: Gateway, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLHOST, *args, "--data-dir", str(gw.home / "data")], capture_output=True, text=True,
                          timeout=60, env=_env())


def audit(gw: Gateway) -> list[dict[str, Any]]:
    out = toolhost(gw, "audit", "--json", "--limit", "1000")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


CALLERS = [("open", None), ("keys", "alice"), ("off", None)]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("mode", "user"), CALLERS)
async def test_resource_and_prompt_content_counts_for_session_taint(serves, mode, user, era) -> None:
    gw = serves[mode]
    key = gw.keys.get(user) if user else None
    async with session(gw, era, key) as s:  # private via a file:// resource, untrusted via a page resource
        assert await s.read(PLAN) == "Q3 plan: acquire Example Corp (confidential)."
        assert (await s.read(NEWS)).startswith("Today's news. <IMPORTANT>")
        held, text = await s.call("out__post_message", {"text": "the plan"})
    assert held and "permission_denied" in text
    assert f"Private data came from #1 resources/read {PLAN} (call " in text
    assert f"Untrusted content came from #2 resources/read {NEWS} (call " in text
    async with session(gw, era, key) as s:  # untrusted via a prompt
        await s.read(PLAN)
        assert (await s.prompt("web__summarize")).startswith("Summarize this: <IMPORTANT>")
        held, text = await s.call("out__post_message", {"text": "the plan"})
    assert held and "Untrusted content came from #2 prompts/get web__summarize (call " in text
    async with session(gw, era, key) as s:  # the untrusted page alone: the post runs
        await s.read(NEWS)
        assert await s.call("out__post_message", {"text": "hi"}) == (False, "posted: hi")
    async with session(gw, era, key) as s:  # the private file alone: the post runs
        await s.read(PLAN)
        assert await s.call("out__post_message", {"text": "hi"}) == (False, "posted: hi")


@pytest.mark.parametrize("era", ERAS)
async def test_sampling_in_a_tainted_session_is_refused_and_never_asks_for_context(serves, era) -> None:
    gw = serves["open"]
    async with session(gw, era) as s:  # a clean session: the model is asked, includeContext none
        assert await s.call("web__helper", {}) == (False, "helper got: (notes)")
        assert await s.read("toolhost://web/think://plans") == "thought on plans: (notes)"
        assert await s.call("oldweb__recall", {}) == (False, "recall got: (notes)")
        assert [p.include_context for p in s.sampled] == ["none", "none", "none"]
        assert s.sampled[0].system_prompt == "[Requested by MCP server 'web' through toolhost]"
    async with session(gw, era) as s:
        await s.read(PLAN)
        await s.call("web__fetch_page", {"url": "http://example.test/"})
        held, text = await s.call("web__helper", {})
        with pytest.raises(MCPError) as read_err:  # a read that samples meets the same rule
            await s.read("toolhost://web/think://plans")
        old_held, old_text = await s.call("oldweb__recall", {})  # a handshake-era upstream's classic request
        assert s.sampled == []  # the model was never asked
    assert held and "toolhost: sampling refused: this session has read private data and untrusted content" in text
    assert f"Private data came from #1 resources/read {PLAN}" in text and "web__fetch_page" in text
    assert "Decided by the config rule toolhost.taint (deny" in text
    assert read_err.value.code == -32600 and "toolhost: sampling refused" in read_err.value.message
    assert old_held and "toolhost: sampling refused: this session has read private data" in old_text
    rows = sorted((r for r in audit(gw) if r["action"] == "taint" and r["status"] == "sampling_refused"),
                  key=lambda r: r["id"])
    assert [(r["tool"], r["decision"]) for r in rows[-3:]] == [
        ("web__helper", "deny"), ("sampling/createMessage by web", None), ("oldweb__recall", "deny")]


async def test_catalog_reads_are_audited_in_every_mode_refused_ones_included(serves) -> None:
    before = {mode: max((r["id"] for r in audit(serves[mode])), default=0) for mode in ("open", "keys")}
    for mode, user in (("open", None), ("keys", "bob"), ("off", None)):
        gw = serves[mode]
        async with session(gw, MODERN, gw.keys.get(user) if user else None) as s:
            if mode == "keys":  # bob's grants do not cover files/web: hidden, answered like unknown
                with pytest.raises(MCPError, match="Resource not found"):
                    await s.read(PLAN)
                with pytest.raises(MCPError, match="Unknown prompt: web__summarize"):
                    await s.prompt("web__summarize")
            else:
                await s.read(PLAN)
                await s.prompt("web__summarize")
            with pytest.raises(MCPError, match="Resource not found"):
                await s.read(SECRET_URI)
    masked = "toolhost://web/page://nope?api_key=[REDACTED]"
    got = {mode: [(r["action"], r["tool"], r["status"], r["user"]) for r in sorted(audit(serves[mode]),
                                                                                 key=lambda r: r["id"])
                  if r["action"] in ("resource", "prompt") and r["id"] > before[mode]] for mode in ("open", "keys")}
    assert got["open"] == [("resource", PLAN, "ok", "local"), ("prompt", "web__summarize", "ok", "local"),
                           ("resource", masked, "unknown", "local")]
    assert got["keys"] == [("resource", PLAN, "hidden", "bob"), ("prompt", "web__summarize", "hidden", "bob"),
                           ("resource", masked, "unknown", "bob")]
    for mode in ("open", "keys"):
        assert all("sk-proj-" not in json.dumps(r) for r in audit(serves[mode]))
    assert [r for r in audit(serves["off"]) if r["action"] in ("resource", "prompt")] == []  # --auth off: no auditor

"""Misbehaving remote upstreams (tests/upstream/fakes/http_fake.py) and unreachable ones.

Expired sessions are recovered, auth failures name the header and quote
``WWW-Authenticate``, DNS/TLS failures say what they are, and a server that stops answering is
found by ``ping``; every test also checks that a healthy neighbour kept serving.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import anyio
import httpx2
import pytest

from host.upstream.manager import ServerManager
from host.upstream.status import ConnectionState
from tests.upstream.support import FAKES, StatusWatch, config, hostile

pytestmark = pytest.mark.anyio


class HttpFake:
    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"

    def control(self, mode: str) -> None:
        httpx2.post(f"http://127.0.0.1:{self.port}/control", json={"mode": mode}, timeout=10).raise_for_status()

    def stats(self) -> dict:
        return httpx2.get(f"http://127.0.0.1:{self.port}/stats", timeout=10).json()


@pytest.fixture(params=["legacy"])
def http_fake(request) -> Iterator[HttpFake]:
    extra = ["0", "modern"] if request.param == "modern" else []
    proc = subprocess.Popen([sys.executable, str(FAKES / "http_fake.py"), *extra], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # bounded: it prints the port first or exits
        assert line.startswith("LISTENING "), line
        yield HttpFake(int(line.split()[1]))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:  # a request held open by "hang" delays uvicorn's graceful exit
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.parametrize("reconnect", [True, False], ids=["serve", "one-shot"])
async def test_expired_session_is_reinitialized_and_the_call_retried_once(http_fake, tmp_path, reconnect):
    watch = StatusWatch()
    cfg = config({"remote": {"url": http_fake.url}, "good": hostile()}, ping_interval_seconds=0)
    with anyio.fail_after(40):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=reconnect, on_status=watch) as m:
            conn = m.connections["remote"]
            assert conn.status.protocol_version == "2025-11-25"
            assert (await m.call_tool("remote", "echo", {"text": "a"}, timeout_seconds=10)).content[0].text == "a"
            http_fake.control("forget")
            res = await m.call_tool("remote", "echo", {"text": "b"}, timeout_seconds=10)
            assert res.content[0].text == "b"
            assert http_fake.stats() == {"initializes": 2, "calls": 2, "not_found": 1, "discovers": 2}
            # Re-initialized at once (no backoff), with the reason recorded.
            assert ("remote", "connecting", "connection: the server forgot the MCP session (HTTP 404); "
                    "re-initializing") in watch.history
            assert watch.states("remote") == ["connecting", "connected", "connecting", "connected"]
            assert [t.original_name for t in m.registry.by_server("remote")] == ["echo"]  # re-listed
            res = await m.call_tool("remote", "echo", {"text": "c"}, timeout_seconds=10)
            assert res.content[0].text == "c"
            assert (await m.call_tool("good", "echo", {"text": "g"}, timeout_seconds=10)).content[0].text == "g"
    log = (tmp_path / "logs" / "remote.stderr.log").read_text()
    assert "with Mcp-Session-Id: the server forgot the session" in log


@pytest.mark.parametrize(("mode", "headers", "expected"), [
    ("unauthorized", {}, "the server rejected the credentials (401 Unauthorized); set "
     "mcpServers.remote.headers.Authorization, e.g. \"Bearer ${TOKEN}\""),
    ("forbidden", {"Authorization": "Bearer nope"}, "the server refused access (403 Forbidden); check the token in "
     "mcpServers.remote.headers.Authorization"),
])
async def test_auth_failure_names_the_header_and_the_challenge(http_fake, tmp_path, mode, headers, expected):
    http_fake.control(mode)
    cfg = config({"remote": {"url": http_fake.url, "headers": headers}, "good": hostile()})
    with anyio.fail_after(40):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True) as m:
            st = m.connections["remote"].status
            assert st.state is ConnectionState.FAILED
            assert st.error == (f"handshake: mcpServers.remote.url: {expected}; WWW-Authenticate: Bearer "
                                "realm=\"fake\", error=\"invalid_token\" (not retried: fix it, then run "
                                "`toolhost reconnect remote` or reload the config)")
            assert (await m.call_tool("good", "echo", {"text": "g"}, timeout_seconds=10)).content[0].text == "g"


async def test_dns_and_tls_failures_say_what_they_are(http_fake, tmp_path):
    tls_url = f"https://127.0.0.1:{http_fake.port}/mcp"
    cfg = config({"dns": {"url": "http://no-such-host.invalid/mcp"}, "tls": {"url": tls_url}, "good": hostile()})
    with anyio.fail_after(40):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=False) as m:
            st = {s.name: s for s in m.statuses()}
            assert st["dns"].state is ConnectionState.FAILED
            assert st["dns"].error.startswith("handshake: mcpServers.dns.url: DNS lookup of the host in "
                                              "http://no-such-host.invalid/mcp failed (")
            assert st["dns"].error.endswith("); check the host name")
            assert st["tls"].error.startswith(f"handshake: mcpServers.tls.url: TLS handshake with {tls_url} failed (")
            assert st["tls"].error.endswith("); check the scheme (https vs http) and port")
            assert (await m.call_tool("good", "echo", {"text": "g"}, timeout_seconds=10)).content[0].text == "g"


async def test_unanswered_pings_degrade_then_drop_and_the_server_comes_back(http_fake, tmp_path):
    watch = StatusWatch()
    cfg = config({"remote": {"url": http_fake.url}}, ping_interval_seconds=0.3, backoff_max_seconds=0.5)
    with anyio.fail_after(40):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True, on_status=watch) as m:
            conn = m.connections["remote"]
            http_fake.control("hang")
            await watch.until(lambda: conn.status.state is ConnectionState.DEGRADED, timeout=10)
            assert conn.status.error.startswith("liveness: ping failed (")
            await watch.until(lambda: conn.status.state is ConnectionState.BACKING_OFF, timeout=10)
            assert conn.status.error == "connection: 2 pings in a row failed; reconnecting"
            http_fake.control("normal")
            await watch.until(lambda: conn.status.state is ConnectionState.CONNECTED, timeout=20)
            res = await m.call_tool("remote", "echo", {"text": "back"}, timeout_seconds=10)
            assert res.content[0].text == "back"


@pytest.mark.parametrize("http_fake", ["modern"], indirect=True)
async def test_2026_sessions_are_probed_with_discover_not_the_removed_ping(http_fake, tmp_path):
    cfg = config({"remote": {"url": http_fake.url}}, ping_interval_seconds=0.2)
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True) as m:
            conn = m.connections["remote"]
            assert conn.status.protocol_version >= "2026"
            while http_fake.stats()["discovers"] < 4:  # the connect probe + three liveness probes
                await anyio.sleep(0.1)  # the probes run on their own clock; poll the server's count
            assert conn.status.state is ConnectionState.CONNECTED and conn.status.error is None
            assert (await m.call_tool("remote", "echo", {"text": "m"}, timeout_seconds=10)).content[0].text == "m"

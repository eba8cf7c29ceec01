"""``/metrics`` of a real serve carries what operators scrape: process and Python collectors, the
build info with the version, the audit queue depth, rate-limit rejections, no ``_created`` series;
and the HTTP middleware counts every answer by status and every refused key by reason."""

from __future__ import annotations

import json
import platform

import anyio
import httpx2
import pytest
from mcp.server import Server
from mcp.server.auth.provider import AccessToken, TokenVerifier
from prometheus_client.parser import text_string_to_metric_families

from host.access import AccessControl
from host.upstream.implementation import toolhost_version
from servers.http.api_keys import auth_settings
from servers.http.sessions import fair_http_app, session_manager_of
from servers.observability.http_metrics import HttpMetrics
from servers.observability.metrics import Metrics
from tests.admin.support import PY, Serve, mcp_client, people

pytestmark = pytest.mark.anyio


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``{(sample name, sorted labels): value}`` of a Prometheus text exposition (parsed by the client library)."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_real_serve_exposes_process_python_build_audit_and_rate_limit_series(tmp_path) -> None:
    data = tmp_path / "data"
    keys = people(data)
    cfg = tmp_path / "cfg.json"
    # audit rows stay queued for 60 s (interval durability): the queue depth is exact
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30, "audit_durability": "interval",
                                            "audit_flush_seconds": 60,
                                            "rate_limits": {"per_user": {"calls": 2, "per_seconds": 3600}}},
                               "mcpServers": {"orders": {"command": PY, "args": ["-m", "servers.examples.orders"]}}}))

    async def calls(url: str) -> list[str]:
        with anyio.fail_after(60):
            async with mcp_client(url, keys["alice"]) as c:
                return [(r.meta or {}).get("toolhost/error", {}).get("code", "ok") for r in [
                    await c.call_tool("call_tool", {"name": "orders__get_order", "arguments": {"order_id": "A1001"}})
                    for _ in range(3)]]

    with Serve(cfg, data) as serve:
        assert anyio.run(calls, serve.url) == ["ok", "ok", "rate_limited"]
        # with API keys on, /metrics takes a credential: the local admin token here
        text = httpx2.get(serve.url + "/metrics", headers={"Authorization": f"Bearer {serve.token}"}, timeout=30).text
        got = samples(text)
    assert "_created" not in text
    assert got[("toolhost_build_info", (("python", platform.python_version()), ("version", toolhost_version())))] == 1
    assert got[("process_resident_memory_bytes", ())] > 10_000_000
    assert got[("process_cpu_seconds_total", ())] > 0 and got[("process_open_fds", ())] > 0
    assert ("python_info", (("implementation", "CPython"), ("major", "3"), ("minor", "11"),
                            ("patchlevel", platform.python_version_tuple()[2]),
                            ("version", platform.python_version()))) \
        in got
    assert got[("python_gc_collections_total", (("generation", "0"),))] >= 1
    assert got[("toolhost_rate_limit_rejections_total", (("scope", "call"),))] == 1
    assert got[("toolhost_tool_calls_total", (("server", "orders"), ("status", "rate_limited"),
                                              ("tool", "orders__get_order")))] == 1
    # every row written so far is still queued (interval durability), and written at shutdown
    access = AccessControl.open(data)
    try:
        rows = access.audit_log.query(limit=1000)
    finally:
        access.close()
    assert got[("toolhost_audit_queue_depth", ())] == len(rows) == 4, [(r.action, r.tool, r.status) for r in rows]


class _Keys(TokenVerifier):
    async def verify_token(self, token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id="alice", scopes=["tools"]) if token == "good" else None


async def test_http_answers_are_counted_by_status_and_refused_keys_by_reason() -> None:
    server: Server = Server("t")
    metrics = Metrics()
    app = HttpMetrics(fair_http_app(server, token_verifier=_Keys(), auth=auth_settings("http://127.0.0.1:8765/mcp")),
                      metrics)
    manager = session_manager_of(server)
    assert manager is not None
    mcp = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    with anyio.fail_after(30):
        async with manager.run(), httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                                     base_url="http://127.0.0.1:8765") as http:
            for auth in (None, None, "Basic x", "Bearer th_0123456789ab_nope", "Bearer good"):
                await http.post("/mcp", content=init, headers=mcp | ({"Authorization": auth} if auth else {}))
            await http.get("/nowhere")
    got = samples(metrics.render().decode())
    assert {k: v for k, v in got.items() if k[0] in ("toolhost_http_requests_total", "toolhost_auth_failures_total")} \
        == {("toolhost_http_requests_total", (("status", "401"),)): 4,
            ("toolhost_http_requests_total", (("status", "200"),)): 1,
            ("toolhost_http_requests_total", (("status", "404"),)): 1,
            ("toolhost_auth_failures_total", (("reason", "no_key"),)): 2,
            ("toolhost_auth_failures_total", (("reason", "not_bearer"),)): 1,
            ("toolhost_auth_failures_total", (("reason", "bad_key"),)): 1}

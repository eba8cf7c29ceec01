"""The runtime tells its observers how long each call, search and upstream request took, and the
Prometheus metrics record exactly those (``host.observers``, ``servers.observability.metrics``)."""

from __future__ import annotations

import sys

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from host.config import parse_config
from host.runtime import HostRuntime
from registry import AllowAll
from servers.observability.metrics import Metrics

pytestmark = pytest.mark.anyio


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(metrics.render().decode()) for s in family.samples}


class Recorder:
    """A :class:`host.observers.CallObserver` that keeps what it was told."""

    def __init__(self) -> None:
        self.upstream: list[tuple[str, float]] = []
        self.calls: list[tuple[str, str | None, str, float, float]] = []
        self.searches: list[tuple[float, int]] = []

    def upstream_finished(self, server, seconds) -> None:
        self.upstream.append((server, seconds))

    def call_finished(self, name, tool, result, seconds, upstream_seconds) -> None:
        self.calls.append((name, tool.server if tool else None, result.status.value, seconds, upstream_seconds))

    def search_finished(self, seconds, hits) -> None:
        self.searches.append((seconds, hits))


async def test_calls_searches_and_upstream_requests_are_observed_and_counted(tmp_path) -> None:
    orders = {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}
    cfg = parse_config({"mcpServers": {"orders": orders}})
    metrics, seen = Metrics(), Recorder()
    with anyio.fail_after(60):
        async with HostRuntime(cfg, data_dir=tmp_path, policy=AllowAll()) as rt:
            rt.observe(metrics)
            rt.observe(seen)
            hits = len(rt.search("order status").hits)
            ok = await rt.call("orders__get_order", {"order_id": "A1001"})
            unknown = await rt.call("orders__nope", {})
    assert (ok.status.value, unknown.status.value) == ("ok", "unknown_tool")
    assert [s for s, _ in seen.upstream] == ["orders"]  # the unknown name never went upstream
    (name, server, status, seconds, upstream), (name2, server2, status2, _s, upstream2) = seen.calls
    assert (name, server, status, name2, server2, status2, upstream2) == (
        "orders__get_order", "orders", "ok", "orders__nope", None, "unknown_tool", 0.0)
    assert upstream == seen.upstream[0][1] and 0 < upstream <= seconds
    assert [h for _, h in seen.searches] == [hits] and hits > 0
    got = samples(metrics)
    ok_labels = (("server", "orders"), ("status", "ok"), ("tool", "orders__get_order"))
    assert got[("toolhost_tool_calls_total", ok_labels)] == 1
    assert got[("toolhost_tool_calls_total", (("server", "-"), ("status", "unknown_tool"), ("tool", "-")))] == 1
    assert got[("toolhost_upstream_call_duration_seconds_count", (("server", "orders"),))] == 1
    assert got[("toolhost_upstream_call_duration_seconds_sum", (("server", "orders"),))] == pytest.approx(upstream)
    assert got[("toolhost_call_duration_seconds_sum", (("server", "orders"),))] == pytest.approx(seconds)
    assert got[("toolhost_gateway_overhead_seconds_sum", (("server", "orders"),))] == pytest.approx(seconds - upstream)
    assert got[("toolhost_search_duration_seconds_count", ())] == 1
    assert got[("toolhost_search_hits_sum", ())] == hits

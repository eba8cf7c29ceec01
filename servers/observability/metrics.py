"""Prometheus metrics of a running host, through the official ``prometheus-client``.

Series (all prefixed ``toolhost_``):

* ``tool_calls_total{server,tool,status}`` - finished calls by result status (``ok``,
  ``tool_error``, ``permission_denied``, ...; ``server`` is ``-`` for unknown tools);
* ``call_duration_seconds{server}`` - whole call, gateway included (histogram);
* ``gateway_overhead_seconds{server}`` - the part of a call spent in toolhost (validation,
  policy, approvals, result shaping): whole call minus upstream time (histogram);
* ``upstream_call_duration_seconds{server}`` - time spent waiting on the upstream server (histogram);
* ``search_duration_seconds`` and ``search_hits`` - ``tool_search`` latency and hit count (histograms);
* ``upstream_up{server}`` (1 connected, 0 otherwise), ``upstream_tools{server}``,
  ``upstream_reconnects_total{server}``;
* ``approvals_pending``, ``tools_held`` (definition pins holding a changed tool),
  ``sessions_open`` (MCP HTTP sessions), ``audit_queue_depth`` (audit rows handed to the writer
  thread and not committed yet) - read at scrape time;
* ``build_info{version,python}`` - always 1, the labels say what runs;
* ``http_requests_total{status}`` - HTTP answers by status code; ``auth_failures_total{reason}`` -
  401 answers of the MCP endpoint by ``no_key`` / ``not_bearer`` / ``bad_key``;
  ``rate_limit_rejections_total{scope}`` - ``call`` (a tool call refused by a rate limit) and
  ``session`` (HTTP 429: a user's session limit) (:mod:`servers.observability.http_metrics`);
* the client library's ``process_*`` (CPU, memory, open files, start time) and ``python_*``
  (version, garbage collector) collectors, unprefixed, as every Python exporter names them.

Counters have no ``_created`` series (``prometheus_client.disable_created_metrics()``): they double
the exposition for a value no dashboard reads. Source: the Prometheus exposition format and
prometheus-client's documentation ("Disabling _created metrics").
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Callable
from typing import Any

from prometheus_client import (
    GC_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from host.calls import ToolResult
from host.upstream.implementation import toolhost_version
from registry import ToolRecord

__all__ = ["CONTENT_TYPE", "Metrics"]

_logger = logging.getLogger("toolhost.metrics")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""Content type of the Prometheus text exposition format."""

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
HIT_BUCKETS = (0, 1, 2, 3, 5, 10, 20, 50)


class _LiveCollector(Collector):
    """Gauges read from the running host at scrape time (never stale)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self):  # type: ignore[override]
        m = self.metrics
        up = GaugeMetricFamily("toolhost_upstream_up", "1 when the upstream server is connected.", labels=["server"])
        tools = GaugeMetricFamily("toolhost_upstream_tools", "Tools listed by the upstream server.", labels=["server"])
        for status in m.statuses():
            up.add_metric([status.name], 1.0 if status.state.value == "connected" else 0.0)
            tools.add_metric([status.name], float(status.tool_count))
        yield up
        yield tools
        for name, doc, read in (
            ("toolhost_approvals_pending", "Calls waiting for a human's approval.", m.pending_approvals),
            ("toolhost_tools_held", "Tools held because their definition changed since it was pinned.", m.held_tools),
            ("toolhost_sessions_open", "Open MCP HTTP sessions (2025 protocol versions; 2026-07-28 requests carry "
                                       "none).", m.open_sessions),
            ("toolhost_audit_queue_depth", "Audit rows handed to the writer thread and not committed yet.",
             m.audit_pending),
        ):
            try:
                value = float(read())
            except Exception:  # a scrape never fails because one source does
                _logger.exception("toolhost: reading %s failed", name)
                continue
            yield GaugeMetricFamily(name, doc, value=value)


class Metrics:
    """The collectors of one host, in their own :class:`CollectorRegistry` (so tests and several
    hosts in one process never clash). A :class:`host.observers.CallObserver`: register it with
    :meth:`host.runtime.HostRuntime.observe` to count and time calls, searches and upstream requests.

    Args:
        statuses: returns every server's :class:`host.upstream.ServerStatus`.
        pending_approvals, held_tools, open_sessions, audit_pending: read at scrape time (return 0
            when unknown).
    """

    def __init__(
        self,
        statuses: Callable[[], list[Any]] = list,
        *,
        pending_approvals: Callable[[], int] = lambda: 0,
        held_tools: Callable[[], int] = lambda: 0,
        open_sessions: Callable[[], int] = lambda: 0,
        audit_pending: Callable[[], int] = lambda: 0,
    ) -> None:
        disable_created_metrics()  # process-wide: no _created series (module docstring)
        self.statuses = statuses
        self.pending_approvals = pending_approvals
        self.held_tools = held_tools
        self.open_sessions = open_sessions
        self.audit_pending = audit_pending
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        if GC_COLLECTOR is not None:  # None on interpreters without gc.get_stats
            GCCollector(registry=r)
        Gauge("toolhost_build_info", "Always 1; the labels say which toolhost and Python run.",
              ["version", "python"], registry=r).labels(toolhost_version(), platform.python_version()).set(1)
        self.http_requests = Counter("toolhost_http_requests", "HTTP answers by status code.", ["status"], registry=r)
        self.auth_failures = Counter(
            "toolhost_auth_failures", "Refused MCP requests: no_key, not_bearer or bad_key.", ["reason"], registry=r
        )
        self.rate_limited = Counter(
            "toolhost_rate_limit_rejections", "Rejections by a rate limit: call (tool calls) or session (HTTP 429).",
            ["scope"], registry=r,
        )
        self.calls = Counter("toolhost_tool_calls", "Finished tool calls.", ["server", "tool", "status"], registry=r)
        self.call_seconds = Histogram(
            "toolhost_call_duration_seconds", "Whole tool call (gateway + upstream).", ["server"],
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.gateway_seconds = Histogram(
            "toolhost_gateway_overhead_seconds", "Time of a call spent in toolhost itself.", ["server"],
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.upstream_seconds = Histogram(
            "toolhost_upstream_call_duration_seconds", "Time waiting on the upstream server.", ["server"],
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.search_seconds = Histogram(
            "toolhost_search_duration_seconds", "tool_search latency.", buckets=LATENCY_BUCKETS, registry=r
        )
        self.search_hits = Histogram("toolhost_search_hits", "Hits per tool_search.", buckets=HIT_BUCKETS, registry=r)
        self.reconnects = Counter(
            "toolhost_upstream_reconnects", "Reconnects after a lost connection.", ["server"], registry=r
        )
        r.register(_LiveCollector(self))

    def render(self) -> bytes:
        """The Prometheus text exposition of every series."""
        return generate_latest(self.registry)

    # -- host.observers.CallObserver: the runtime's calls, searches and upstream requests
    def upstream_finished(self, server: str, seconds: float) -> None:
        self.upstream_seconds.labels(server).observe(seconds)

    def call_finished(self, name: str, tool: ToolRecord | None, result: ToolResult, seconds: float,
                      upstream_seconds: float) -> None:
        server = tool.server if tool is not None else "-"
        label = name if tool is not None else "-"  # unknown names are not label values (cardinality)
        self.calls.labels(server, label, result.status.value).inc()
        if result.status.value == "rate_limited":
            self.rate_limited.labels("call").inc()
        self.call_seconds.labels(server).observe(seconds)
        self.gateway_seconds.labels(server).observe(max(0.0, seconds - upstream_seconds))

    def search_finished(self, seconds: float, hits: int) -> None:
        self.search_seconds.observe(seconds)
        self.search_hits.observe(hits)

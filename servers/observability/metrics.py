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

import contextvars
import logging
import platform
import time
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

from host.upstream.implementation import toolhost_version

__all__ = ["CONTENT_TYPE", "Metrics", "instrument"]

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
    hosts in one process never clash).

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


class _TimedExecutor:
    """A :class:`host.upstream.executor.ToolExecutor` that measures upstream time per call."""

    def __init__(self, inner: Any, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any], **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.inner.call_tool(server, tool, arguments, **kwargs)
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.upstream_seconds.labels(server).observe(elapsed)
            spent = _upstream_spent.get()
            if spent is not None:
                spent.append(elapsed)


_upstream_spent: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("toolhost_upstream", default=None)
"""Upstream seconds of the call running in this context (tasks spawned by the call share the list)."""


def instrument(runtime: Any, metrics: Metrics) -> None:
    """Count and time every call and search of ``runtime`` (a :class:`host.runtime.HostRuntime`).

    Wraps the pipeline's executor (upstream time) and the runtime's ``call`` and ``search``
    (whole call, gateway overhead = whole - upstream, search latency and hits). Idempotent.
    """
    if getattr(runtime, "_toolhost_metrics", None) is metrics:
        return
    runtime._toolhost_metrics = metrics
    timed = _TimedExecutor(runtime.pipeline.executor, metrics)
    runtime.pipeline.executor = timed
    call, search = runtime.call, runtime.search

    async def timed_call(name: str, arguments: Any, *args: Any, **kwargs: Any) -> Any:
        spent: list[float] = []
        token = _upstream_spent.set(spent)
        started = time.perf_counter()
        try:
            result = await call(name, arguments, *args, **kwargs)
        finally:
            _upstream_spent.reset(token)
        total = time.perf_counter() - started
        record = runtime.registry.snapshot().get(name)  # None for unknown names (never raises)
        server = record.server if record is not None else "-"
        tool = name if record is not None else "-"  # unknown names are not label values (cardinality)
        metrics.calls.labels(server, tool, result.status.value).inc()
        if result.status.value == "rate_limited":
            metrics.rate_limited.labels("call").inc()
        metrics.call_seconds.labels(server).observe(total)
        metrics.gateway_seconds.labels(server).observe(max(0.0, total - sum(spent)))
        return result

    def timed_search(query: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = search(query, *args, **kwargs)
        metrics.search_seconds.observe(time.perf_counter() - started)
        metrics.search_hits.observe(len(result.hits))
        return result

    runtime.call = timed_call
    runtime.search = timed_search


"""Operating a running ``toolhost serve``: Prometheus metrics, health/readiness endpoints and events.

* :class:`Metrics` - the ``prometheus-client`` collectors, a :class:`host.observers.CallObserver`
  (``runtime.observe(metrics)``);
* :func:`health_routes` - ``/healthz``, ``/readyz`` and ``/metrics`` Starlette routes;
* :class:`EventReporter` - one console/log line per event that matters (server state changes,
  held tools, approvals, config reloads).
"""

from servers.observability.events import EventReporter, configure_logging
from servers.observability.health import health_routes, readiness
from servers.observability.metrics import Metrics

__all__ = ["EventReporter", "Metrics", "configure_logging", "health_routes", "readiness"]

"""``/healthz``, ``/readyz`` and ``/metrics`` routes for ``toolhost serve`` (Starlette).

* ``GET /healthz`` - the process answers: ``200 {"status": "ok"}``.
* ``GET /readyz`` - ready to serve: the permission store answers a read and at least one
  configured server is usable (``connected``/``degraded``), or none is configured. ``200`` when
  ready, ``503`` otherwise; the body is always::

      {"ready": true, "store": "ok", "servers": [{"name": "orders", "state": "connected",
       "tools": 3, "error": null}, ...]}

  (``store`` is ``"off"`` when serving without a permission store, or ``"unavailable"``; a failed
  probe is counted by :data:`host.pipeline.STORE_OUTAGE_LOG`: at most one serve-log line per outage
  window, naming the failure's kind and class, never the driver's text or the database host).
* ``GET /metrics`` - Prometheus text format (:class:`servers.observability.Metrics`).

With API keys on (``authorize`` given), what is served without a credential names nothing:
``/readyz`` answers only ``{"ready": true|false}`` (same status codes) and ``/metrics`` answers
``401`` with ``WWW-Authenticate: Bearer``; an admin user's API key or the local admin token (from
loopback) as ``Authorization: Bearer ...`` gets the details and the metrics. ``/healthz`` stays
open. In open access and with ``--auth off`` every client may use every tool anyway, and these
routes answer everyone as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from host.pipeline import STORE_OUTAGE_LOG, find_store_error
from servers.observability.metrics import CONTENT_TYPE, Metrics

__all__ = ["USABLE_STATES", "Authorize", "health_routes", "readiness"]

Authorize = Callable[[Request], Awaitable[bool]]
"""Whether a request carries a credential that may see details (an admin key or the local token)."""

USABLE_STATES = frozenset({"connected", "degraded"})
"""Server states in which calls are served."""


def _server_row(status: Any) -> dict[str, Any]:
    return {
        "name": status.name,
        "transport": status.transport,
        "state": status.state.value,
        "tools": status.tool_count,
        "error": status.error,
    }


def readiness(statuses: list[Any], store_error: str | None, store_used: bool = True) -> tuple[bool, dict[str, Any]]:
    """``(ready, body)`` for ``/readyz`` from server statuses and the store probe's error (``None``: ok)."""
    store = "off" if not store_used else (store_error or "ok")
    rows = [_server_row(s) for s in statuses]
    servers_ok = not rows or any(r["state"] in USABLE_STATES for r in rows)
    ready = store_error is None and servers_ok
    return ready, {"ready": ready, "store": store, "servers": rows}


def health_routes(
    statuses: Callable[[], list[Any]], metrics: Metrics | None, store_check: Callable[[], None] | None = None,
    *, authorize: Authorize | None = None,
) -> list[Route]:
    """The three routes; ``store_check`` runs in a worker thread (it may touch the database);
    ``authorize``: with API keys on, who may see readiness details and metrics (``None``: everyone)."""

    async def healthz(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        error = None
        if store_check is not None:
            try:
                await anyio.to_thread.run_sync(store_check)
            except Exception as e:  # noqa: BLE001 - any failure of the probe means not ready
                STORE_OUTAGE_LOG.note(find_store_error(e) or e, "readiness check")
                error = "unavailable"
            else:
                STORE_OUTAGE_LOG.recovered()
        ready, body = readiness(statuses(), error, store_check is not None)
        if authorize is not None and not await authorize(request):
            body = {"ready": ready}
        return JSONResponse(body, status_code=200 if ready else 503)

    async def metrics_endpoint(request: Request) -> Response:
        if authorize is not None and not await authorize(request):
            return JSONResponse({"error": {"code": "unauthorized", "message": (
                "metrics need a credential: send 'Authorization: Bearer <API key of an admin user>' "
                "(or the local admin token from this machine)")}}, status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="toolhost-metrics"'})
        if metrics is None:
            return Response("metrics are off\n", status_code=404, media_type="text/plain")
        data = await anyio.to_thread.run_sync(metrics.render)
        return Response(data, media_type=CONTENT_TYPE)

    return [
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/readyz", readyz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]

"""``/healthz``, ``/readyz`` and ``/metrics`` routes for ``toolhost serve`` (Starlette).

* ``GET /healthz`` - the process answers: ``200 {"status": "ok"}``.
* ``GET /readyz`` - ready to serve: the permission store answers a read and at least one
  configured server is usable (``connected``/``degraded``), or none is configured. ``200`` when
  ready, ``503`` otherwise; the body is always::

      {"ready": true, "store": "ok", "servers": [{"name": "orders", "state": "connected",
       "tools": 3, "error": null}, ...]}

  (``store`` is ``"off"`` when serving without a permission store, or the error text).
* ``GET /metrics`` - Prometheus text format (:class:`servers.observability.Metrics`).

None of them needs a key: they reveal server names and states but no tool arguments or secrets
(bind to loopback, or keep the port behind your network policy, if names are sensitive).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from servers.observability.metrics import CONTENT_TYPE, Metrics

__all__ = ["USABLE_STATES", "health_routes", "readiness"]

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
    statuses: Callable[[], list[Any]], metrics: Metrics | None, store_check: Callable[[], None] | None = None
) -> list[Route]:
    """The three routes; ``store_check`` runs in a worker thread (it may touch the database)."""

    async def healthz(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_request: Request) -> Response:
        error = None
        if store_check is not None:
            try:
                await anyio.to_thread.run_sync(store_check)
            except Exception as e:  # noqa: BLE001 - any failure of the probe means not ready
                error = f"{type(e).__name__}: {e}"
        ready, body = readiness(statuses(), error, store_check is not None)
        return JSONResponse(body, status_code=200 if ready else 503)

    async def metrics_endpoint(_request: Request) -> Response:
        if metrics is None:
            return Response("metrics are off\n", status_code=404, media_type="text/plain")
        data = await anyio.to_thread.run_sync(metrics.render)
        return Response(data, media_type=CONTENT_TYPE)

    return [
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/readyz", readyz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]

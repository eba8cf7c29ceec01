"""``/metrics`` on a listener of its own, without a credential (``toolhost serve --metrics-port``).

With API keys on, the main listener's ``/metrics`` needs an admin's credential (it names tools and
their call counts). A Prometheus server that cannot send one scrapes this listener instead: an
address of its own (by default ``127.0.0.1``; put it on an interface only the monitoring network
reaches), serving ``GET /metrics`` (Prometheus text format) and nothing else (every other path
``404``). It starts and stops with ``toolhost serve``. Source: Prometheus exposition formats;
uvicorn ``Server.serve(sockets=...)``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import anyio
import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from servers.http.runner import host_for_url
from servers.observability import Metrics

__all__ = ["METRICS_PATH", "metrics_app", "metrics_url", "serve_metrics"]

METRICS_PATH = "/metrics"
_log = logging.getLogger("toolhost.serve")


def metrics_app(metrics: Metrics) -> Starlette:
    """The listener's ASGI app: ``GET /metrics`` only (rendered in a worker thread)."""

    async def endpoint(_request: Request) -> Response:
        data = await anyio.to_thread.run_sync(metrics.render)
        return Response(data, media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route(METRICS_PATH, endpoint, methods=["GET"])])


def metrics_url(sock: object) -> str:
    """``http://HOST:PORT/metrics`` of a bound socket."""
    host, port = sock.getsockname()[:2]  # type: ignore[attr-defined]
    return f"http://{host_for_url(host)}:{port}{METRICS_PATH}"


class _Quiet(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # serve handles the signals and sets ``stop``
        yield


async def serve_metrics(sock: object, metrics: Metrics, stop: anyio.Event) -> None:
    """Serve :func:`metrics_app` on the bound ``sock`` until ``stop`` is set."""
    config = uvicorn.Config(metrics_app(metrics), log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=1)
    server = _Quiet(config)
    async with anyio.create_task_group() as tg:

        async def exit_on_stop() -> None:
            await stop.wait()
            server.should_exit = True

        tg.start_soon(exit_on_stop)
        _log.info("toolhost: /metrics without a credential at %s", metrics_url(sock))
        await server.serve(sockets=[sock])  # type: ignore[list-item]
        tg.cancel_scope.cancel()

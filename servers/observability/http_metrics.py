"""Counting every HTTP answer of ``toolhost serve`` (an ASGI middleware around the whole app).

:class:`HttpMetrics` wraps the ASGI app ``serve_http`` runs and, once each response starts, adds
one to ``toolhost_http_requests_total{status}``; a 401 of the MCP endpoint also counts
``toolhost_auth_failures_total{reason}`` (``no_key``, ``not_bearer``, ``bad_key``: the same
classification as the answer's text, :func:`servers.http.key_challenge.challenge_for`), and a 429
counts ``toolhost_rate_limit_rejections_total{scope="session"}`` (a user's session limit).
Nothing else is read from the request, so the cost is one dictionary lookup per answer.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from servers.http.defaults import MCP_PATH
from servers.http.key_challenge import challenge_for
from servers.observability.metrics import Metrics

__all__ = ["AUTH_REASONS", "HttpMetrics", "with_http_metrics"]

AUTH_REASONS = {None: "no_key", "invalid_request": "not_bearer", "invalid_token": "bad_key"}
"""``challenge_for``'s error code -> the ``reason`` label."""


class HttpMetrics:
    """ASGI middleware: count each HTTP answer of ``app`` in ``metrics`` (module docstring)."""

    def __init__(self, app: ASGIApp, metrics: Metrics, *, mcp_path: str = MCP_PATH) -> None:
        self.app = app
        self.metrics = metrics
        self.mcp_path = mcp_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                self._count(scope, int(message["status"]))
            await send(message)

        await self.app(scope, receive, counted)

    def _count(self, scope: Scope, status: int) -> None:
        m = self.metrics
        m.http_requests.labels(str(status)).inc()
        if status == 401 and scope.get("path", "").rstrip("/") == self.mcp_path:
            error, _text = challenge_for(scope.get("headers") or [])
            m.auth_failures.labels(AUTH_REASONS.get(error, "bad_key")).inc()
        elif status == 429:
            m.rate_limited.labels("session").inc()


def with_http_metrics(metrics: Metrics | None) -> Any:
    """``wrap_app`` for :func:`servers.http.runner.serve_http`: ``app -> HttpMetrics(app, metrics)``
    (identity when ``metrics`` is ``None``)."""
    if metrics is None:
        return lambda app: app
    return lambda app: HttpMetrics(app, metrics)

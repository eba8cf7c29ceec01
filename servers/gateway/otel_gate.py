"""The MCP SDK's server spans only while tracing is on (issue 12).

The low-level ``Server`` ships an ``OpenTelemetryMiddleware`` in its public ``middleware`` list that
opens a span per request even when no tracer provider is installed (the API's proxy then hands
out no-op spans; py-spy: ~1% of serve's CPU per forwarded call). :func:`spans_when_tracing`
replaces it by a gate that calls it only while :func:`host.tracing.enabled` (checked per request,
so a provider installed later is honoured), and passes the request straight on otherwise.
"""

from __future__ import annotations

from typing import Any

from mcp.server import Server

from host.tracing import enabled

__all__ = ["spans_when_tracing"]


class _WhenTracing:
    """Runs ``inner`` (the SDK's span middleware) only while tracing is on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if enabled():
            return await self.inner(ctx, call_next)
        return await call_next(ctx)


def spans_when_tracing(server: Server[Any]) -> None:
    """Gate every ``OpenTelemetryMiddleware`` of ``server.middleware`` behind :func:`host.tracing.enabled`."""
    server.middleware = [
        _WhenTracing(m) if type(m).__name__ == "OpenTelemetryMiddleware" else m for m in server.middleware
    ]

"""The SDK's per-request span middleware runs only while tracing is on (issue 12, servers.gateway.otel_gate)."""

from __future__ import annotations

import anyio
import pytest
from mcp.server import Server

import servers.gateway.otel_gate as gate
from servers.gateway.otel_gate import spans_when_tracing


def test_the_sdk_span_middleware_is_gated_and_the_others_are_kept() -> None:
    server: Server = Server("x")
    other = object()
    server.middleware.append(other)  # type: ignore[arg-type]
    sdk = server.middleware[0]
    spans_when_tracing(server)
    assert type(sdk).__name__ == "OpenTelemetryMiddleware"
    assert [type(m).__name__ for m in server.middleware] == ["_WhenTracing", "object"]
    assert server.middleware[0].inner is sdk and server.middleware[1] is other  # type: ignore[attr-defined]


@pytest.mark.anyio
@pytest.mark.parametrize(("tracing", "expected"), [(False, ["handler"]), (True, ["span", "handler", "span end"])])
async def test_the_gate_calls_the_span_middleware_only_while_tracing(monkeypatch, tracing, expected) -> None:
    seen: list[str] = []

    class OpenTelemetryMiddleware:
        async def __call__(self, ctx, call_next):
            seen.append("span")
            result = await call_next(ctx)
            seen.append("span end")
            return result

    async def handler(ctx):
        seen.append("handler")
        return {"ctx": ctx}

    class Holder:
        middleware = [OpenTelemetryMiddleware()]

    holder = Holder()
    spans_when_tracing(holder)  # type: ignore[arg-type]
    monkeypatch.setattr(gate, "enabled", lambda: tracing)
    with anyio.fail_after(5):
        assert await holder.middleware[0]("c", handler) == {"ctx": "c"}
    assert seen == expected

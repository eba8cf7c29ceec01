"""OpenTelemetry spans of a tool call (``host.tracing``), recorded by the SDK's in-memory exporter:
names, parents, attributes, and no argument or secret in any attribute."""

from __future__ import annotations

import sys

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import host.tracing
from host.config import parse_config
from host.runtime import HostRuntime
from registry import (
    AllowAll,  # the runtime's default is safe; these tests call tools freely
    Principal,
)


@pytest.fixture
def spans(monkeypatch):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(host.tracing, "_tracer", lambda: provider.get_tracer("toolhost"))
    yield exporter
    provider.shutdown()


@pytest.mark.anyio
async def test_one_span_per_call_stage_and_upstream_call_without_secrets(tmp_path, spans) -> None:
    cfg = parse_config({"mcpServers": {"orders": {"command": sys.executable,
                                                  "args": ["-m", "servers.examples.orders"]}}}, data_dir=tmp_path)
    secret = "sk-live-abcdef0123456789abcdef"
    with anyio.fail_after(60):
        async with HostRuntime(cfg, policy=AllowAll(), data_dir=tmp_path) as rt:
            spans.clear()
            ok = await rt.call("orders__get_order", {"order_id": "A1001", "note": secret}, Principal("alice"),
                               call_id="c1")
            done = spans.get_finished_spans()
            spans.clear()
            bad = await rt.call("orders__nope", {"token": secret}, Principal("alice"), call_id="c2")
            refused = spans.get_finished_spans()
    assert ok.status.value == "ok"
    by_name = {s.name: s for s in done}
    assert sorted(by_name) == ["toolhost.call", "toolhost.execute", "toolhost.prepare", "toolhost.upstream"]
    call, prepare, execute, upstream = (by_name[n] for n in
                                        ("toolhost.call", "toolhost.prepare", "toolhost.execute", "toolhost.upstream"))
    assert call.parent is None
    assert prepare.parent.span_id == call.context.span_id and execute.parent.span_id == call.context.span_id
    assert upstream.parent.span_id == execute.context.span_id
    assert len({s.context.trace_id for s in done}) == 1
    assert dict(call.attributes) == {"toolhost.tool": "orders__get_order", "toolhost.server": "orders",
                                     "toolhost.user": "alice", "toolhost.call_id": "c1",
                                     "toolhost.status": "ok"}
    assert dict(prepare.attributes) == {"toolhost.tool": "orders__get_order", "toolhost.call_id": "c1",
                                        "toolhost.server": "orders", "toolhost.decision": "allow",
                                        "toolhost.rule": "allow-all"}
    assert dict(execute.attributes) == {"toolhost.calls": 1}
    assert dict(upstream.attributes) == {"toolhost.server": "orders", "toolhost.upstream_tool": "get_order",
                                         "rpc.system": "mcp"}

    # an unknown tool: refused in prepare, no execute or upstream span, error status on the call
    assert sorted(s.name for s in refused) == ["toolhost.call", "toolhost.prepare"]
    rcall = next(s for s in refused if s.name == "toolhost.call")
    rprep = next(s for s in refused if s.name == "toolhost.prepare")
    assert (bad.status.value, rcall.attributes["toolhost.status"], rcall.status.status_code) == (
        "unknown_tool", "unknown_tool", StatusCode.ERROR)
    assert (rprep.attributes["toolhost.status"], rprep.attributes["toolhost.stage"]) == ("unknown_tool", "lookup")
    for s in (*done, *refused):
        for value in s.attributes.values():
            assert secret not in str(value) and "A1001" not in str(value)


def test_standard_otel_variables_turn_tracing_on_and_nothing_else_does(tmp_path) -> None:
    import subprocess

    code = ("from host.tracing import configure_from_env, span\n"
            "on = configure_from_env()\n"
            "with span('toolhost.call', **{'toolhost.tool': 't'}):\n    pass\n"
            "from opentelemetry import trace\n"
            "trace.get_tracer_provider().shutdown() if on else None\n"
            "print('ON' if on else 'OFF')\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                        env=env | {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "gw-1"})
    assert on.stdout.rstrip().endswith("ON"), on.stderr
    assert '"name": "toolhost.call"' in on.stdout and '"service.name": "gw-1"' in on.stdout
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert off.stdout == "OFF\n"
    bad = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=env | {"OTEL_TRACES_EXPORTER": "zipkin"})
    assert (
        bad.stdout == "OFF\n" and "OTEL_TRACES_EXPORTER='zipkin': toolhost supports otlp, console or none" in bad.stderr
    )

"""Optional OpenTelemetry tracing: one span per call, per pipeline stage and per upstream call.

Spans (tracer ``toolhost``; attributes never carry arguments, results or credentials):

* ``toolhost.call`` — one tool call through :meth:`host.runtime.HostRuntime.call`:
  ``toolhost.tool``, ``toolhost.server``, ``toolhost.user``, ``toolhost.call_id``, ``toolhost.status``
  (``ok``, ``permission_denied``, ...); error status when the result is an error;
* ``toolhost.prepare`` — look-up, parse, validate, authorize/approval of one call (child of the call):
  ``toolhost.tool``, ``toolhost.decision`` (``allow``/``approval``/``deny``) and ``toolhost.rule``,
  or ``toolhost.status`` and ``toolhost.stage`` when it refused the call there;
* ``toolhost.execute`` — running the prepared calls of a batch (timeouts, scheduling, format/limit):
  ``toolhost.calls``;
* ``toolhost.upstream`` — one ``tools/call`` to an upstream server (child of ``toolhost.execute``):
  ``toolhost.server``, ``toolhost.upstream_tool``, ``rpc.system`` = ``mcp``; error status with the
  exception type when it raised.

Nothing is recorded unless an OpenTelemetry SDK is configured: with only ``opentelemetry-api``
(a dependency of the MCP SDK) every span is a no-op. :func:`configure_from_env` (``toolhost serve``
calls it) installs the SDK's tracer provider when ``opentelemetry-sdk`` is installed (extra
``otel``) and the standard ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console``) or
``OTEL_EXPORTER_OTLP_ENDPOINT``/``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` variables ask for it; the
exporter reads its own ``OTEL_EXPORTER_OTLP_*`` settings and the resource ``OTEL_SERVICE_NAME`` /
``OTEL_RESOURCE_ATTRIBUTES`` (default service name ``toolhost``). Source: OpenTelemetry SDK
environment variable specification.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

__all__ = ["configure_from_env", "enabled", "span"]

_log = logging.getLogger("toolhost.tracing")

try:
    from opentelemetry import trace as _trace
    from opentelemetry.trace import ProxyTracerProvider, Status, StatusCode
except ImportError:  # pragma: no cover - opentelemetry-api comes with the MCP SDK
    _trace = None  # type: ignore[assignment]


def _tracer() -> Any:
    """The ``toolhost`` tracer, or ``None`` while no tracer provider is installed (the API's proxy
    would hand out no-op spans at ~15 µs each, four per call, on the call path)."""
    if _trace is None or isinstance(_trace.get_tracer_provider(), ProxyTracerProvider):
        return None
    return _trace.get_tracer("toolhost")


def enabled() -> bool:
    """Whether spans are recorded now (a tracer provider is installed); ~0.3 µs."""
    return _tracer() is not None


@contextmanager
def _span(tracer: Any, name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    clean = {k: v for k, v in attributes.items() if v is not None}
    with tracer.start_as_current_span(name, attributes=clean, record_exception=False,
                                      set_status_on_exception=False) as s:
        try:
            yield s
        except BaseException as e:
            if s.is_recording():
                s.set_status(Status(StatusCode.ERROR, type(e).__name__))  # the type only: messages may hold data
            raise


def span(name: str, **attributes: Any) -> Any:
    """A context manager opening span ``name`` with ``attributes`` (``None`` values left out); yields
    the span (``set_attribute`` on it is safe), or ``None`` while no tracer provider is installed."""
    tracer = _tracer()
    if tracer is None:
        return nullcontext(None)
    return _span(tracer, name, attributes)


def mark_result(s: Any, status: str) -> None:
    """Set ``toolhost.status`` (and an error status for anything but ``ok``) on span ``s``."""
    if s is None or not s.is_recording():
        return
    s.set_attribute("toolhost.status", status)
    if status != "ok":
        s.set_status(Status(StatusCode.ERROR, status))


def configure_from_env() -> bool:
    """Install the OpenTelemetry SDK's tracer provider as the standard ``OTEL_*`` variables ask
    (see module docstring); ``True`` when tracing is on. Never raises: a missing package or a bad
    setting is logged and tracing stays off."""
    exporter_names = [e.strip() for e in os.environ.get("OTEL_TRACES_EXPORTER", "").split(",") if e.strip()]
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true" or (not exporter_names and not endpoint):
        return False
    if exporter_names == ["none"]:
        return False
    try:
        from opentelemetry.sdk.resources import OTELResourceDetector, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        _log.warning("toolhost: OTEL_* tracing settings found but opentelemetry-sdk is not installed "
                     "(pip install 'toolhost[otel]'); tracing stays off")
        return False
    try:
        resource = Resource.create({"service.name": "toolhost"}).merge(OTELResourceDetector().detect())
        provider = TracerProvider(resource=resource)
        for name in exporter_names or ["otlp"]:
            if name == "console":
                provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
            elif name == "otlp":
                provider.add_span_processor(BatchSpanProcessor(_otlp_exporter()))
            else:
                raise ValueError(f"OTEL_TRACES_EXPORTER={name!r}: toolhost supports otlp, console or none")
        _trace.set_tracer_provider(provider)
    except Exception as e:  # noqa: BLE001 - tracing is optional, never a reason not to serve
        _log.warning("toolhost: tracing stays off: %s", e)
        return False
    return True


def _otlp_exporter() -> Any:
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise ValueError(f"the OTLP exporter for {protocol} is not installed (pip install 'toolhost[otel]')") from None
    return OTLPSpanExporter()

"""Running the registry server: streamable HTTP (uvicorn) or stdio, with graceful shutdown.

SIGINT and SIGTERM stop the server, then every upstream connection (stdio children are
terminated), so no orphan process is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.transport_security import TransportSecuritySettings

from host.limits import SessionLimits
from servers.gateway.registry_server import RegistryServer
from servers.http.auth_throttle import AuthFailureThrottle
from servers.http.headers import strip_header_whitespace
from servers.http.sessions import fair_http_app
from servers.http.store_outage import store_outage_guard

__all__ = [
    "HEADER_TIMEOUT_ENV",
    "HEADER_TIMEOUT_SECONDS",
    "LOOP_ENV",
    "bind_socket",
    "event_loop_options",
    "header_timeout_seconds",
    "http_protocol",
    "host_for_url",
    "serve_http",
    "shutdown_on_signals",
    "transport_security_for",
]

from servers.http.defaults import DEFAULT_HOST, DEFAULT_PORT, MCP_PATH  # re-exported

GRACEFUL_SHUTDOWN_SECONDS = 5.0
"""How long open client streams may delay shutdown after SIGINT/SIGTERM (seconds)."""


LOOP_ENV = "TOOLHOST_LOOP"
"""Environment variable choosing the event loop of ``toolhost serve``: ``uvloop`` (default when
installed) or ``asyncio``."""


def event_loop_options() -> dict[str, Any]:
    """anyio ``backend_options`` for ``toolhost serve``: uvloop unless ``TOOLHOST_LOOP=asyncio``.

    Chosen by measurement (``bench/gateway.py --alt TOOLHOST_LOOP=asyncio``): uvloop made the
    sequential HTTP path ~25% faster on the reference machine (it also speeds up the stdio pipes
    to upstream servers). Falls back to asyncio when uvloop is not installed (e.g. Windows).
    """
    choice = os.environ.get(LOOP_ENV, "uvloop").strip().lower()
    if choice not in ("uvloop", "asyncio"):
        raise ValueError(f"{LOOP_ENV} must be 'uvloop' or 'asyncio', got {choice!r}")
    if choice == "uvloop":
        try:
            import uvloop  # noqa: F401 - only probes that uvloop is installed
        except ImportError:
            return {}
        return {"use_uvloop": True}
    return {}


class _CoalescingTransport(asyncio.Transport):
    """A transport whose writes made in one event-loop turn leave in one ``send()``.

    uvicorn writes a response's status line + headers and its body with two ``transport.write``
    calls; with Nagle off (as it must be) that is two TCP segments and two wake-ups of the client
    per call. Here the writes are joined and sent on the next loop turn (``call_soon``), so a
    small response is one segment; a streamed (SSE) response still goes out event by event.
    ``close``/``write_eof`` send what is buffered first. Every other method of
    :class:`asyncio.Transport` is the wrapped transport's, delegated by name.
    """

    def __init__(self, transport: Any) -> None:
        super().__init__()
        self._transport = transport
        self._buffer: list[bytes] = []
        self._loop = asyncio.get_running_loop()

    def write(self, data: bytes) -> None:
        if not self._buffer:
            self._loop.call_soon(self._flush)
        self._buffer.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def _flush(self) -> None:
        if self._buffer:
            data = b"".join(self._buffer)
            self._buffer.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(b) for b in self._buffer)

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._buffer.clear()
        self._transport.abort()

    # -- the rest of asyncio.Transport, the wrapped transport's --------------------------------
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()


HEADER_TIMEOUT_ENV = "TOOLHOST_HEADER_TIMEOUT_SECONDS"
"""Environment variable overriding :data:`HEADER_TIMEOUT_SECONDS`."""

HEADER_TIMEOUT_SECONDS = 10.0
"""How long a client may take to send a request's headers (seconds, from the connection or the
request's first byte); a connection that has not sent them by then is closed (slow-loris)."""


def header_timeout_seconds() -> float:
    """:data:`HEADER_TIMEOUT_SECONDS`, or ``$TOOLHOST_HEADER_TIMEOUT_SECONDS`` (a positive number).

    Raises:
        ValueError: the variable is not a positive number.
    """
    raw = os.environ.get(HEADER_TIMEOUT_ENV, "").strip()
    if not raw:
        return HEADER_TIMEOUT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{HEADER_TIMEOUT_ENV} must be a positive number of seconds, got {raw!r}")
    return value


def http_protocol() -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol: ``httptools`` (C parser, measured ~25% faster per call than
    ``h11`` on this path) when installed, else ``h11``; either with coalesced writes
    (:class:`_CoalescingTransport`). With ``httptools`` (a dependency), a request's headers must
    arrive within :func:`header_timeout_seconds` of the connection (or of the request's first byte
    on a kept-alive connection), else the connection is closed: uvicorn has no header-read timeout,
    and idle sockets trickling headers (slow-loris) would otherwise be held open for ever."""
    timeout = header_timeout_seconds()
    try:
        import httptools  # noqa: F401 - only probes that httptools is installed
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base

        guarded = True
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base  # type: ignore[assignment]

        guarded = False

    class CoalescingProtocol(base):  # type: ignore[misc, valid-type]
        _header_timer: Any = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(_CoalescingTransport(transport))
            if guarded:
                self._arm_header_timer()

        def _arm_header_timer(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(timeout, self._headers_too_slow)

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def on_message_begin(self) -> None:  # httptools only (h11 has no such callback)
            super().on_message_begin()
            self._arm_header_timer()

        def on_headers_complete(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

    return CoalescingProtocol


class _QuietSignalsServer(uvicorn.Server):
    """uvicorn server whose signals we handle ourselves (so cleanup runs before exit)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def host_for_url(host: str) -> str:
    """``host`` as it appears in a URL: IPv6 literals in brackets (``[::1]``)."""
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else bare


def transport_security_for(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for the bound ``host``: only requests whose ``Host`` (and
    ``Origin``, when sent) name this host or a loopback alias are served.

    The SDK protects only the exact spellings ``127.0.0.1``, ``localhost`` and ``::1``; any
    other loopback address (``127.0.0.2``, ``[::1]``) would be unprotected, so we always pass
    settings. A wildcard bind (``0.0.0.0``, ``::``) cannot know its public names: ``None``
    (no check; toolhost then requires API keys, see :mod:`host.access.open_access`).
    """
    bare = host.strip("[]")
    if bare in ("0.0.0.0", "::", ""):
        return None
    names = {host_for_url(bare)}
    try:
        if bare == "localhost" or ipaddress.ip_address(bare).is_loopback:
            names |= {"127.0.0.1", "localhost", "[::1]"}
    except ValueError:
        pass  # a host name: only itself
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(f"{n}:*" for n in names) + sorted(names),
        allowed_origins=sorted(f"http://{n}:*" for n in names) + sorted(f"https://{n}:*" for n in names),
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv4 or IPv6), for :func:`serve_http`.

    Raises:
        OSError: the address is in use or cannot be assigned.
        ValueError: the port is outside 0-65535.
    """
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be 0-65535, got {port}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio turns Nagle off on accepted connections only when the
    # socket says it is TCP (``base_events._set_nodelay`` checks ``sock.proto``); a socket made
    # with proto 0 left every small streamed response waiting for the client's delayed ACK
    # (~40 ms per call). TCP_NODELAY on the listener is inherited by accepted sockets on Linux too.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


@contextlib.asynccontextmanager
async def shutdown_on_signals() -> AsyncIterator[anyio.Event]:
    """Yield an event set by the first SIGINT/SIGTERM; later signals are absorbed until the block ends.

    Hold it around start-up, serving and cleanup, so a second Ctrl+C cannot interrupt the
    cleanup of child servers half-way.
    """
    stop = anyio.Event()

    async def watch() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _sig in signals:
                stop.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            yield stop
        finally:
            tg.cancel_scope.cancel()


async def _until(stop: anyio.Event, action: Callable[[], None]) -> None:
    await stop.wait()
    action()


async def serve_http(
    server: Server[Any],
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    sock: socket.socket | None = None,
    stop: anyio.Event,
    token_verifier: Any = None,
    auth: Any = None,
    on_ready: Callable[[str], None] | None = None,
    session_limits: SessionLimits | None = None,
    routes: list[Any] | None = None,
    after_response: Callable[[], None] | None = None,
    wrap_app: Callable[[Any], Any] | None = None,
) -> None:
    """Serve ``server`` on ``http://host:port/mcp`` until ``stop`` is set.

    Args:
        server: the registry server.
        host: interface to bind (``127.0.0.1`` by default; DNS-rebinding protection is on for loopback).
        port: TCP port (0: any free port; ``on_ready`` receives the real one).
        sock: an already bound socket (:func:`bind_socket`) to serve on instead of binding here.
        stop: set it to shut down (see :func:`shutdown_on_signals`).
        token_verifier: an SDK ``TokenVerifier`` for bearer API keys (``None``: no auth).
        auth: the SDK ``AuthSettings`` that go with ``token_verifier``.
        on_ready: called with the endpoint URL once the socket listens.
        session_limits: per-user session limit and idle expiry (:mod:`servers.http.sessions`).
        routes: more Starlette routes served beside ``/mcp`` (health, metrics, admin).
        after_response: run after each 2026-07-28 answer went to the socket (the event log's
            deferred writes, :meth:`host.events.EventLog.defer`).
        wrap_app: ASGI middleware around the whole app, e.g. counting every answer
            (:func:`servers.observability.http_metrics.with_http_metrics`).
    """
    app = fair_http_app(
        server,
        limits=session_limits,
        streamable_http_path=MCP_PATH,
        host=host,
        transport_security=transport_security_for(host),
        token_verifier=token_verifier,
        auth=auth,
        custom_starlette_routes=routes,
        after_response=after_response,
    )
    config = uvicorn.Config(
        # 503 + Retry-After while the store is down; failed logins throttled per client
        store_outage_guard(
            AuthFailureThrottle(strip_header_whitespace(wrap_app(app) if wrap_app is not None else app))
        ),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        http=http_protocol(),
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    http = _QuietSignalsServer(config)

    async with anyio.create_task_group() as tg:

        def request_exit() -> None:
            http.should_exit = True
            if isinstance(server, RegistryServer):
                server.listen_relay.close()  # listen streams end with their final result, not holding shutdown

        tg.start_soon(_until, stop, request_exit)

        async def announce() -> None:
            while not http.started and not http.should_exit:
                await anyio.sleep(0.05)  # uvicorn exposes no started event
            if http.started and on_ready is not None:
                bound = port
                for srv in http.servers:  # set by uvicorn's startup, before ``started``
                    for listener in srv.sockets:
                        bound = listener.getsockname()[1]
                on_ready(f"http://{host_for_url(host)}:{bound}{MCP_PATH}")

        tg.start_soon(announce)
        await http.serve(sockets=[sock] if sock is not None else None)
        tg.cancel_scope.cancel()



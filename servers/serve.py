"""Running the registry server: streamable HTTP (uvicorn) or stdio, with graceful shutdown.

SIGINT and SIGTERM stop the server, then every upstream connection (stdio children are
terminated), so no orphan process is left behind.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.stdio import stdio_server

__all__ = ["bind_socket", "serve_http", "serve_stdio", "shutdown_on_signals"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"


class _QuietSignalsServer(uvicorn.Server):
    """uvicorn server whose signals we handle ourselves (so cleanup runs before exit)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv4 or IPv6), for :func:`serve_http`.

    Raises:
        OSError: the address is in use or cannot be assigned.
        ValueError: the port is outside 0-65535.
    """
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be 0-65535, got {port}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
    """
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=host, token_verifier=token_verifier, auth=auth
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", access_log=False)
    http = _QuietSignalsServer(config)

    async with anyio.create_task_group() as tg:

        def request_exit() -> None:
            http.should_exit = True

        tg.start_soon(_until, stop, request_exit)

        async def announce() -> None:
            while not http.started and not http.should_exit:
                await anyio.sleep(0.05)  # uvicorn exposes no started event
            if http.started and on_ready is not None:
                bound = port
                for srv in getattr(http, "servers", []):
                    for listener in srv.sockets:
                        bound = listener.getsockname()[1]
                on_ready(f"http://{host}:{bound}{MCP_PATH}")

        tg.start_soon(announce)
        await http.serve(sockets=[sock] if sock is not None else None)
        tg.cancel_scope.cancel()


async def serve_stdio(server: Server[Any], *, stop: anyio.Event) -> None:
    """Serve ``server`` over this process's stdin/stdout until EOF or ``stop`` is set."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(_until, stop, tg.cancel_scope.cancel)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        tg.cancel_scope.cancel()

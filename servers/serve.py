"""Running the registry server: streamable HTTP (uvicorn) or stdio, with graceful shutdown.

SIGINT and SIGTERM stop the server, then every upstream connection (stdio children are
terminated), so no orphan process is left behind.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.stdio import stdio_server

__all__ = ["serve_http", "serve_stdio", "shutdown_on_signals"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"


class _QuietSignalsServer(uvicorn.Server):
    """uvicorn server whose signals we handle ourselves (so cleanup runs before exit)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


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
                    for sock in srv.sockets:
                        bound = sock.getsockname()[1]
                on_ready(f"http://{host}:{bound}{MCP_PATH}")

        tg.start_soon(announce)
        await http.serve()
        tg.cancel_scope.cancel()


async def serve_stdio(server: Server[Any], *, stop: anyio.Event) -> None:
    """Serve ``server`` over this process's stdin/stdout until EOF or ``stop`` is set."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(_until, stop, tg.cancel_scope.cancel)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        tg.cancel_scope.cancel()

"""Running the registry server: streamable HTTP (uvicorn) or stdio, with graceful shutdown.

SIGINT and SIGTERM stop the server, then every upstream connection (stdio children are
terminated), so no orphan process is left behind.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.stdio import stdio_server

__all__ = ["serve_http", "serve_stdio"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"


class _QuietSignalsServer(uvicorn.Server):
    """uvicorn server whose signals we handle ourselves (so cleanup runs before exit)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _stop_on_signal(on_signal: Callable[[], None]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _sig in signals:
            on_signal()
            return


async def serve_http(
    server: Server[Any],
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token_verifier: Any = None,
    auth: Any = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``server`` on ``http://host:port/mcp`` until SIGINT/SIGTERM.

    Args:
        server: the registry server.
        host: interface to bind (``127.0.0.1`` by default; DNS-rebinding protection is on for loopback).
        port: TCP port.
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

        def stop() -> None:
            http.should_exit = True

        tg.start_soon(_stop_on_signal, stop)

        async def announce() -> None:
            while not http.started and not http.should_exit:
                await anyio.sleep(0.05)  # uvicorn exposes no started event
            if http.started and on_ready is not None:
                on_ready(f"http://{host}:{port}{MCP_PATH}")

        tg.start_soon(announce)
        await http.serve()
        tg.cancel_scope.cancel()


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin/stdout until EOF or SIGINT/SIGTERM."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, tg.cancel_scope.cancel)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        tg.cancel_scope.cancel()

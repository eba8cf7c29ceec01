"""Example MCP server ``echo``: one ``async def`` tool that returns its input, for benchmarks.

Run: ``python -m servers.examples.echo`` (stdio) or
``python -m servers.examples.echo --http --port 0`` (streamable HTTP on 127.0.0.1; the URL is
printed on stdout as ``listening on http://127.0.0.1:PORT/mcp``).

Tools:

* ``echo(text)`` — read-only, idempotent, closed world; returns ``text`` unchanged.
"""

from __future__ import annotations

import argparse
import socket

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

__all__ = ["create_server", "main"]


def create_server() -> MCPServer:
    """The echo server (not started)."""
    app = MCPServer("echo", version="0.1.0", log_level="WARNING")

    @app.tool(
        title="Echo",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False),
    )
    async def echo(text: str) -> str:
        """Return ``text`` unchanged."""
        return text

    return app


def main(argv: list[str] | None = None) -> None:
    """Serve over stdio, or over streamable HTTP with ``--http``."""
    p = argparse.ArgumentParser(description="Echo MCP server (benchmarks).")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument("--port", type=int, default=0, help="HTTP port (0: any free port)")
    a = p.parse_args(argv)
    app = create_server()
    if not a.http:
        app.run()
        return
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", a.port))
    sock.listen(1024)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(app.streamable_http_app(host="127.0.0.1"), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()

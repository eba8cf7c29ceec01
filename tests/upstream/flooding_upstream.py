"""A stdio MCP server that floods: its stderr and, on request, log notifications (log cap tests).

Run: ``python tests/upstream/flooding_upstream.py MIB``: writes ``MIB`` MiB of 1 KiB stderr lines
from a thread as fast as it can, then the line ``FLOOD DONE``. Tool ``notify(count)`` sends
``count`` ``notifications/message`` logs during the call.
"""

from __future__ import annotations

import sys
import threading
import warnings

from mcp.server.mcpserver import Context, MCPServer


def flood(mib: float) -> None:
    line = ("x" * 1000 + "\n").encode()
    for i in range(int(mib * 1024)):
        sys.stderr.buffer.write(f"{i:08d} ".encode() + line[9:])
    sys.stderr.buffer.write(b"FLOOD DONE\n")
    sys.stderr.buffer.flush()


def create_server() -> MCPServer:
    app = MCPServer("flooding", version="1.0.0", log_level="WARNING")

    @app.tool()
    async def notify(ctx: Context, count: int = 1) -> str:
        """Send ``count`` log notifications."""
        for i in range(count):
            await ctx.info(f"notification {i} " + "y" * 200)
        return f"sent {count}"

    return app


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # stderr carries the flood only
    threading.Thread(target=flood, args=(float(sys.argv[1]),), daemon=True).start()
    create_server().run()

"""A small stdio MCP server that sends data out: ``post_message(url, text)`` HTTP-POSTs ``text``.

The egress peer of the session-taint end-to-end test (an HTTP post, like a webhook or a chat
message): not read-only, open world. Run: ``python tests/peers/posting_server.py``.
"""

from __future__ import annotations

import urllib.request

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

app = MCPServer("posting", version="1.0.0", log_level="WARNING")


@app.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True))
async def post_message(url: str, text: str) -> str:
    """Post ``text`` to ``url`` (HTTP POST, text/plain); returns the HTTP status."""
    def post() -> int:
        req = urllib.request.Request(url, data=text.encode(), method="POST", headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(req, timeout=10) as resp:  # the test's own server
            return resp.status

    return f"posted {len(text)} characters: HTTP {await anyio.to_thread.run_sync(post)}"


if __name__ == "__main__":
    app.run()

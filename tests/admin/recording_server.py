"""A stdio MCP server whose destructive ``run`` tool answers exactly the arguments it received
(as canonical JSON): what the tool receives, to compare with what an approver was shown."""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

app = MCPServer("rec", version="0.1.0", log_level="WARNING")


@app.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
async def run(password: str, body: str, note: str = "") -> str:
    """Run something with a password (destructive)."""
    return json.dumps({"password": password, "body": body, "note": note}, ensure_ascii=False, sort_keys=True)


if __name__ == "__main__":
    app.run()

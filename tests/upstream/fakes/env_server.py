"""A stdio MCP server (Python SDK) whose one tool reports the environment it was started with.

Tool ``environment {names}`` → a JSON object of every variable of its process environment
(``names`` given: only those). Used to assert what a stdio child inherits.
"""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer

app = MCPServer("env-reporter", version="1.0.0", log_level="WARNING")


@app.tool()
def environment() -> str:
    """The server's whole environment as a JSON object."""
    return json.dumps(dict(os.environ), sort_keys=True)


if __name__ == "__main__":
    app.run()

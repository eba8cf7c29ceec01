"""A stdio MCP server that records, in a folder, every call it receives (for audit fault tests).

Run: ``python tests/faults/recording_upstream.py DIR``. Each call to ``write``, ``delete`` or
``read`` first creates ``DIR/<key>.started`` (so a test knows the call reached the server); with
``hold=true`` it then waits until ``DIR/<key>.go`` exists, and finally creates ``DIR/<key>.done``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
_DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def create_server(root: Path) -> MCPServer:
    app = MCPServer("recorder", version="1.0.0", log_level="WARNING")

    async def record(tool: str, key: str, hold: bool) -> str:
        (root / f"{key}.started").write_text(tool)
        while hold and not (root / f"{key}.go").exists():
            await anyio.sleep(0.02)
        (root / f"{key}.done").write_text(tool)
        return f"{tool} {key} done"

    @app.tool(annotations=_WRITE)
    async def write(key: str, hold: bool = False) -> str:
        """Record a write of ``key``."""
        return await record("write", key, hold)

    @app.tool(annotations=_DESTRUCTIVE)
    async def delete(key: str, hold: bool = False) -> str:
        """Record a deletion of ``key``."""
        return await record("delete", key, hold)

    @app.tool(annotations=_READ)
    async def read(key: str, hold: bool = False) -> str:
        """Record a read of ``key``."""
        return await record("read", key, hold)

    return app


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    create_server(folder).run()

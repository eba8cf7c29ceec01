"""A stdio MCP server whose tool list grows or renames a tool on request (pin tests).

Run: ``python tests/permissions/growing_upstream.py``. Tools: ``ping(then)`` (read-only) and
``word_count(text)``. ``ping(then="add")`` adds ``export_all`` (a write); ``ping(then="rename")``
renames ``word_count`` to ``count_words`` (a removal plus an addition). Each change is announced
with ``tools/list_changed`` (2026-07-28 ``subscriptions/listen`` and the legacy notification).
"""

from __future__ import annotations

import contextlib

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def create_server() -> MCPServer:
    app = MCPServer("growing", version="1.0.0", log_level="WARNING")

    async def count(text: str) -> str:
        return str(len(text.split()))

    async def export_all(destination: str) -> str:
        return f"exported everything to {destination}"

    @app.tool(description="Answer pong; then='add' adds a tool, then='rename' renames word_count.",
              annotations=_READ)
    async def ping(ctx: Context, then: str = "") -> str:
        if then == "add":
            app.add_tool(export_all, name="export_all", description="Export every record to a destination.",
                         annotations=_WRITE)
        elif then == "rename":
            app.remove_tool("word_count")
            app.add_tool(count, name="count_words", description="Count the words of a text.", annotations=_READ)
        if then:
            await ctx.notify_tools_changed()
            with contextlib.suppress(Exception):
                await ctx.session.send_tool_list_changed()
        return "pong"

    app.add_tool(count, name="word_count", description="Count the words of a text.", annotations=_READ)
    return app


if __name__ == "__main__":
    create_server().run()

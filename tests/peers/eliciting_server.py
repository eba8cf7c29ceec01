"""A stdio MCP server in the Python SDK's common style: a tool that asks the user mid-call with
``ctx.elicit()`` (test peer). It runs on both protocol eras; on a 2026-07-28 session the SDK
refuses the ask (``-32600 ... no back-channel``), so a client must use the handshake era.

Tools: ``book_table {day}`` → elicits ``{"party": int}``, then ``"booked {day} for {party}"``
(``"not booked ({action})"`` when declined or cancelled); prompt ``booking {day}`` elicits the
same and says ``"Book a table on {day} for {party}."``; ``calls_file`` (argv[1], optional): one
line per ``book_table`` start, so a test sees how often the tool ran.
"""

from __future__ import annotations

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

app = MCPServer("eliciting", version="1.0.0", log_level="WARNING")
CALLS_FILE = sys.argv[1] if len(sys.argv) > 1 else None


class Party(BaseModel):
    party: int


@app.tool()
async def book_table(day: str, ctx: Context) -> str:
    """Book a table; asks how many people."""
    if CALLS_FILE:
        async with await anyio.open_file(CALLS_FILE, "a") as fh:
            await fh.write(f"{day}\n")
    answer = await ctx.elicit(f"How many people on {day}?", Party)
    if answer.action != "accept":
        return f"not booked ({answer.action})"
    return f"booked {day} for {answer.data.party}"


@app.prompt()
async def booking(day: str, ctx: Context) -> str:
    """A booking request; asks how many people."""
    answer = await ctx.elicit(f"How many people on {day}?", Party)
    party = answer.data.party if answer.action == "accept" else 0
    return f"Book a table on {day} for {party}."


if __name__ == "__main__":
    app.run()

"""Example MCP server ``flaky``: every way a tool call can go wrong, on purpose.

Run: ``python -m servers.examples.flaky`` (stdio). Tests use :func:`create_server` in-process
and read :class:`FlakyState` to observe what happened inside the handlers.

Tools:

* ``slow(seconds)`` — read-only; sleeps. Whether its handler finished or was cancelled is
  observable (``state.slow_started/finished/cancelled`` and the ``stats`` tool), so a test can
  prove that a timeout or cancel really stopped the upstream handler.
* ``lookup_order(order_id)`` — read-only; answers ``isError: true`` "no such order" for every id
  but ``A1`` (a business answer, not a protocol error).
* ``rate_limited()`` — raises a JSON-RPC error ``-32010 "Rate limit exceeded"`` with
  ``data {"retryAfter": N, "reason": "rate_limited"}`` (N = ``retry_after_seconds``, default 7):
  ``retryAfter`` in seconds is the most common spelling among MCP servers that report one.
  (Not -32000: the SDK uses that code for its own CONNECTION_CLOSED, so a server error with it
  is indistinguishable from a dropped connection on the client side.)
* ``protocol_error()`` — raises a JSON-RPC error ``-32602`` (a non-rate-limit MCP error).
* ``crash()`` — raises ``ValueError``: the SDK turns it into an ``isError`` result.
* ``huge(chars)`` — read-only; returns ``chars`` characters of multi-byte text (``"é漢🙂"`` cycle
  plus line breaks).
* ``image()`` — read-only; returns a 1×1 PNG as image content plus a caption.
* ``structured_only()`` — read-only; returns only ``structuredContent``.
* ``empty()`` — read-only; returns no content at all.
* ``increment(key)`` — a write (not read-only): counts calls per key, for serialization tests.
* ``stats()`` — read-only; the counters of :class:`FlakyState` as JSON.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations

__all__ = ["PNG_1X1", "FlakyState", "create_server", "main"]

PNG_1X1 = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8ffff3f0005fe02fea7356a2a0000000049454e44ae426082"
)).decode()
"""A 1×1 PNG, base64."""

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


@dataclass
class FlakyState:
    """What happened inside the handlers (in-process tests read it directly).

    ``slow_cancelled_event`` is set when a ``slow`` handler is cancelled, so a test can await it.
    """

    retry_after_seconds: float = 7
    slow_started: int = 0
    slow_finished: int = 0
    slow_cancelled: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    slow_started_event: anyio.Event = field(default_factory=anyio.Event)
    slow_cancelled_event: anyio.Event = field(default_factory=anyio.Event)

    def snapshot(self) -> dict[str, Any]:
        return {"slow_started": self.slow_started, "slow_finished": self.slow_finished,
                "slow_cancelled": self.slow_cancelled, "counters": dict(self.counters), "order": list(self.order)}


def create_server(state: FlakyState | None = None) -> MCPServer:
    """A fresh ``flaky`` server reporting into ``state`` (a new one when omitted; see ``app.flaky_state``)."""
    st = state or FlakyState()
    app = MCPServer("flaky", version="1.0.0", log_level="WARNING",
                    instructions="Test server whose tools time out, fail, rate-limit or return huge output.")

    @app.tool(annotations=_READ)
    async def slow(seconds: float = 5.0) -> str:
        """Sleep for ``seconds`` then answer; its cancellation is observable through ``stats``."""
        st.slow_started += 1
        st.order.append("slow:start")
        st.slow_started_event.set()
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            st.slow_cancelled += 1
            st.order.append("slow:cancelled")
            st.slow_cancelled_event.set()
            raise
        st.slow_finished += 1
        st.order.append("slow:end")
        return f"slept {seconds:g} s"

    @app.tool(annotations=_READ)
    async def lookup_order(order_id: str) -> CallToolResult:
        """Look up an order; every id but ``A1`` is unknown (an isError business answer)."""
        if order_id == "A1":
            return CallToolResult(content=[TextContent(type="text", text="order A1: shipped")],
                                  structured_content={"order_id": "A1", "status": "shipped"})
        return CallToolResult(content=[TextContent(type="text", text=f"no such order: {order_id}")], is_error=True)

    @app.tool(annotations=_READ)
    async def rate_limited() -> str:
        """Always rate limited: JSON-RPC error with ``data.retryAfter`` in seconds."""
        raise MCPError(code=-32010, message="Rate limit exceeded",
                       data={"retryAfter": st.retry_after_seconds, "reason": "rate_limited"})

    @app.tool(annotations=_READ)
    async def protocol_error() -> str:
        """Always answers JSON-RPC error -32602."""
        raise MCPError(code=-32602, message="Invalid params: the upstream refused them", data={"field": "x"})

    @app.tool(annotations=_READ)
    async def crash() -> str:
        """Always raises ValueError inside the handler."""
        raise ValueError("the handler crashed")

    @app.tool(annotations=_READ)
    async def huge(chars: int = 100_000) -> str:
        """``chars`` characters of multi-byte text."""
        unit = "é漢🙂 line\n"
        return (unit * (chars // len(unit) + 1))[:chars]

    @app.tool(annotations=_READ)
    async def image() -> CallToolResult:
        """A 1×1 PNG and a caption."""
        return CallToolResult(content=[TextContent(type="text", text="a 1x1 pixel"),
                                       ImageContent(type="image", data=PNG_1X1, mime_type="image/png")])

    @app.tool(annotations=_READ)
    async def structured_only() -> CallToolResult:
        """Only structuredContent, no content blocks."""
        return CallToolResult(content=[], structured_content={"temperature_c": 21.5, "city": "杭州"})

    @app.tool(annotations=_READ)
    async def empty() -> CallToolResult:
        """No content at all."""
        return CallToolResult(content=[])

    @app.tool(annotations=_WRITE)
    async def increment(key: str, delay_seconds: float = 0.0) -> dict[str, int]:
        """Count a call for ``key`` (a state change); optionally wait first."""
        st.order.append(f"increment:{key}:start")
        if delay_seconds:
            await anyio.sleep(delay_seconds)
        st.counters[key] = st.counters.get(key, 0) + 1
        st.order.append(f"increment:{key}:end")
        return {key: st.counters[key]}

    @app.tool(annotations=_READ)
    async def stats() -> dict[str, Any]:
        """The server's counters (slow started/finished/cancelled, increments)."""
        return st.snapshot()

    app.flaky_state = st  # type: ignore[attr-defined]
    return app


def main() -> None:
    """Serve over stdio."""
    create_server().run()


if __name__ == "__main__":
    main()

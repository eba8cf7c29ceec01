"""Example MCP server ``orders``: look up, list and cancel orders of a small in-memory shop.

Run: ``python -m servers.examples.orders`` (stdio). Tests use :func:`create_server` in-process.

Tools (annotations per the MCP spec):

* ``get_order(order_id)`` — read-only, idempotent, closed world.
* ``list_orders(status=None, customer=None, limit=20)`` — read-only.
* ``cancel_order(order_id, reason)`` — destructive (cannot be undone), idempotent.

Business failures ("no such order", "already shipped") come back as ``isError`` results
with a message saying what to do, not as protocol errors.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

__all__ = ["SAMPLE_ORDERS", "create_server", "main"]

OrderStatus = Literal["pending", "paid", "shipped", "delivered", "cancelled"]

SAMPLE_ORDERS: dict[str, dict[str, Any]] = {
    "A1001": {"order_id": "A1001", "customer": "ada@example.com", "status": "pending",
              "items": [{"sku": "KB-01", "name": "Mechanical keyboard", "qty": 1, "price_cents": 8900}]},
    "A1002": {"order_id": "A1002", "customer": "alan@example.com", "status": "paid",
              "items": [{"sku": "MS-02", "name": "Wireless mouse", "qty": 2, "price_cents": 2500}]},
    "A1003": {"order_id": "A1003", "customer": "grace@example.com", "status": "shipped",
              "items": [{"sku": "MN-27", "name": "27-inch monitor", "qty": 1, "price_cents": 27900}]},
    "A1004": {"order_id": "A1004", "customer": "ada@example.com", "status": "delivered",
              "items": [{"sku": "CB-10", "name": "USB-C cable", "qty": 3, "price_cents": 900}]},
    "A1005": {"order_id": "A1005", "customer": "edsger@example.com", "status": "paid",
              "items": [{"sku": "HD-01", "name": "Headphones", "qty": 1, "price_cents": 15900}]},
}

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


def _total(order: dict[str, Any]) -> int:
    return sum(i["qty"] * i["price_cents"] for i in order["items"])


def _view(order: dict[str, Any]) -> dict[str, Any]:
    return {**order, "total_cents": _total(order)}


def create_server(orders: dict[str, dict[str, Any]] | None = None) -> MCPServer:
    """A fresh ``orders`` server over a private copy of ``orders`` (default :data:`SAMPLE_ORDERS`)."""
    data = copy.deepcopy(orders if orders is not None else SAMPLE_ORDERS)
    app = MCPServer("orders", version="1.0.0", log_level="WARNING",
                    instructions="Order desk of the example shop: look up, list and cancel customer orders.")

    def find(order_id: str) -> dict[str, Any]:
        order = data.get(order_id.strip().upper())
        if order is None:
            known = ", ".join(sorted(data))
            raise ToolError(f"no order with id {order_id!r}; known ids look like A1001 (existing: {known})")
        return order

    @app.tool(title="Get order", annotations=_READ)
    async def get_order(order_id: str = Field(description="Order id, e.g. 'A1001'.")) -> dict[str, Any]:
        """Look up one order by its id: status, customer, items and total in cents.

        Use this when the user mentions a specific order number and wants its status or contents.
        """
        return _view(find(order_id))

    @app.tool(title="List orders", annotations=_READ)
    async def list_orders(
        status: OrderStatus | None = Field(default=None, description="Only orders in this status."),
        customer: str | None = Field(default=None, description="Only orders of this customer e-mail."),
        limit: int = Field(default=20, ge=1, le=100, description="Maximum number of orders to return."),
    ) -> dict[str, Any]:
        """List orders, optionally filtered by status or customer e-mail, newest id first.

        Use this to find a customer's orders when they do not know the order id.
        """
        rows = [_view(o) for o in data.values()
                if (status is None or o["status"] == status) and (customer is None or o["customer"] == customer)]
        rows.sort(key=lambda o: o["order_id"], reverse=True)
        return {"orders": rows[:limit], "count": len(rows)}

    @app.tool(title="Cancel order", annotations=_DESTRUCTIVE)
    async def cancel_order(
        order_id: str = Field(description="Id of the order to cancel, e.g. 'A1001'."),
        reason: str = Field(default="customer request", description="Why the order is cancelled."),
    ) -> dict[str, Any]:
        """Cancel an order that has not shipped yet and refund it. This cannot be undone.

        Use this when the customer asks to cancel their order. Shipped or delivered orders
        cannot be cancelled (start a return instead).
        """
        order = find(order_id)
        if order["status"] == "cancelled":
            return {"order_id": order["order_id"], "status": "cancelled", "changed": False}
        if order["status"] in ("shipped", "delivered"):
            raise ToolError(f"order {order['order_id']} is already {order['status']} and cannot be cancelled; "
                            "start a return instead")
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        return {"order_id": order["order_id"], "status": "cancelled", "changed": True,
                "refund_cents": _total(order)}

    return app


def main() -> None:
    """Serve over stdio."""
    create_server().run()


if __name__ == "__main__":
    main()

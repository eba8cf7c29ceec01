"""Small real-looking tool catalogs for the search tests."""

from __future__ import annotations

from typing import Any

from registry.tool import ToolAnnotations, ToolDefinition, ToolOverrides, ToolRecord, build_record


def tool(
    server: str,
    name: str,
    description: str,
    params: dict[str, Any] | None = None,
    *,
    read_only: bool | None = None,
    always_load: bool = False,
) -> ToolRecord:
    schema = {"type": "object", "properties": params or {}}
    return build_record(
        server=server,
        qualified_name=f"{server}__{name}",
        definition=ToolDefinition(
            name=name,
            description=description,
            input_schema=schema,
            annotations=ToolAnnotations(read_only_hint=read_only),
        ),
        overrides=ToolOverrides(always_load=always_load),
    )


def catalog() -> dict[str, list[ToolRecord]]:
    """Three servers: orders, weather, git (9 tools)."""
    s = {"type": "string"}
    return {
        "orders": [
            tool("orders", "cancel_order", "Cancel an order that has not shipped yet.", {"order_id": s}),
            tool("orders", "get_order", "Look up one order by id.", {"order_id": s}, read_only=True),
            tool(
                "orders",
                "refund_payment",
                "Refund the payment of an order.",
                {"order_id": s, "amount": {"type": "number"}},
            ),
        ],
        "weather": [
            tool(
                "weather",
                "getForecast",
                "Weather forecast for a city, days ahead.",
                {"city": {"type": "string", "description": "City name"}, "days": {"type": "integer"}},
                read_only=True,
            ),
            tool(
                "weather",
                "current_conditions",
                "Current temperature and wind at a location.",
                {"lat": {"type": "number"}, "lon": {"type": "number"}},
                read_only=True,
            ),
            tool("weather", "air_quality", "Air quality index (AQI) for a city.", {"city": s}, read_only=True),
        ],
        "git": [
            tool(
                "git",
                "git_status",
                "Show the working tree status of a git repository.",
                {"repo_path": s},
                read_only=True,
            ),
            tool(
                "git",
                "git_commit",
                "Record changes to the repository with a commit message.",
                {"repo_path": s, "message": s},
            ),
            tool(
                "git",
                "git_log",
                "Show the commit logs.",
                {"repo_path": s, "max_count": {"type": "integer"}},
                read_only=True,
            ),
        ],
    }

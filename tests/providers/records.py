"""Tool records used by the provider tests (built through registry.tool.build_record)."""

from __future__ import annotations

from typing import Any

from registry.tool import ToolAnnotations, ToolDefinition, ToolOverrides, ToolRecord, build_record

FORECAST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
    },
    "required": ["city"],
}


def record(
    server: str,
    name: str,
    schema: dict[str, Any] | None = None,
    *,
    description: str = "",
    always_load: bool = False,
    read_only: bool = True,
) -> ToolRecord:
    definition = ToolDefinition(
        name=name,
        description=description or f"{name} tool",
        input_schema=schema if schema is not None else {"type": "object", "properties": {}},
        annotations=ToolAnnotations(read_only_hint=read_only),
    )
    return build_record(
        server=server,
        qualified_name=f"{server}__{name}",
        definition=definition,
        overrides=ToolOverrides(always_load=always_load),
    )


def catalog() -> list[ToolRecord]:
    """weather__get_forecast (always loaded), files__read_image, shipping__get_eta (deferred)."""
    return [
        record(
            "weather", "get_forecast", FORECAST_SCHEMA, description="Weather forecast for a city.", always_load=True
        ),
        record(
            "files",
            "read_image",
            {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            description="Read an image file.",
            always_load=True,
        ),
        record(
            "shipping",
            "get_eta",
            {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
            description="Look up the shipping ETA of an order.",
        ),
    ]

"""Typed stubs from tools' input schemas, and that they parse as Python."""

from __future__ import annotations

import ast

from registry.code_mode import python_names, render_stub, render_stubs, schema_type
from registry.tool import ToolAnnotations, ToolDefinition, build_record


def _record(name, schema, *, description="", output_schema=None, read_only=False):
    definition = ToolDefinition(
        name=name,
        description=description,
        input_schema=schema,
        output_schema=output_schema,
        annotations=ToolAnnotations(read_only_hint=read_only),
    )
    return build_record(server="orders", qualified_name=f"orders__{name}", definition=definition)


def test_schema_types():
    assert schema_type({"type": "string"}) == "str"
    assert schema_type({"type": "array", "items": {"type": "integer"}}) == "list[int]"
    assert schema_type({"type": ["string", "null"]}) == "str | None"
    assert schema_type({"enum": ["open", "done"]}) == 'Literal["open", "done"]'
    assert schema_type({"anyOf": [{"type": "number"}, {"type": "boolean"}]}) == "float | bool"
    assert schema_type({"type": "object"}) == "dict[str, Any]"
    assert schema_type({"$ref": "#/defs/x"}) == "Any"


def test_stub_has_signature_docstring_and_risk():
    record = _record(
        "cancel_order",
        {
            "type": "object",
            "required": ["order_id"],
            "properties": {
                "order_id": {"type": "string", "description": "The order to cancel."},
                "reason": {"type": "string"},
                "dry-run": {"type": "boolean"},
            },
        },
        description="Cancel an order.\nIt cannot be undone.",
    )
    stub = render_stub(record, "orders__cancel_order")
    assert record.qualified_name == "orders__cancel_order"
    assert stub.splitlines() == [
        "async def orders__cancel_order(*, order_id: str, reason: str | None = None, **kwargs: Any) -> str:",
        '    """Cancel an order. It cannot be undone.',
        "",
        "    Risk: destructive (open world). Tool: orders__cancel_order.",
        "    Args:",
        "        order_id: The order to cancel.",
        "    Keyword-only via **kwargs: 'dry-run'.",
        '    """',
    ]


def test_read_tool_with_output_schema_returns_dict_and_all_stubs_parse():
    lister = _record(
        "list",
        {"type": "object", "properties": {"status": {"enum": ["open", "done"]}}},
        description="List orders.",
        output_schema={"type": "object"},
        read_only=True,
    )
    other = _record("ping", {"type": "object"}, description='Say """hi"""')
    names = python_names([lister.qualified_name, other.qualified_name])
    text = render_stubs([other, lister], names)
    assert 'async def orders__list(*, status: Literal["open", "done"] | None = None) -> dict[str, Any]:' in text
    assert "Risk: read (open world). Tool: orders__list." in text
    assert "async def orders__ping() -> str:" in text
    tree = ast.parse(text)
    assert [n.name for n in tree.body if isinstance(n, ast.AsyncFunctionDef)] == ["orders__list", "orders__ping"]


def test_optional_parameter_that_already_admits_none_gets_one_none():
    record = _record(
        "list_orders",
        {
            "type": "object",
            "properties": {
                "status": {"anyOf": [{"enum": ["open", "done"]}, {"type": "null"}]},
                "tag": {"enum": ["a", None]},
                "limit": {"type": ["integer", "null"]},
                "ids": {"type": "array", "items": {"type": ["string", "null"]}},
                "note": {"type": "string"},
            },
        },
    )
    stub = render_stub(record, "orders__list_orders")
    signature = stub.splitlines()[0]
    assert 'status: Literal["open", "done"] | None = None' in signature
    assert 'tag: Literal["a", None] = None' in signature
    assert "limit: int | None = None" in signature
    assert "ids: list[str | None] | None = None" in signature
    assert "note: str | None = None" in signature
    assert "None | None" not in stub
    ast.parse(render_stubs([record], {"orders__list_orders": "orders__list_orders"}))

"""Typed Python stubs of tools, generated from their input schemas, for a model to paste into a script.

One stub per tool::

    async def orders__cancel_order(*, order_id: str, reason: str | None = None) -> dict[str, Any]:
        \"\"\"Cancel an order.

        Risk: destructive (open world). Tool: orders__cancel_order.
        Args:
            order_id: The order to cancel.
        \"\"\"

Types follow JSON Schema (https://json-schema.org/draft/2020-12/json-schema-validation#section-6.1.1):
``string``→``str``, ``integer``→``int``, ``number``→``float``, ``boolean``→``bool``,
``array``→``list[item]``, ``object``→``dict[str, Any]``, ``null``→``None``, ``enum``/``const``→
``Literal[...]``, ``anyOf``/``oneOf``/type lists→unions, anything else→``Any``. Required properties
come first without defaults; optional ones default to ``None`` (the call omits them). Properties whose
names are not identifiers are reachable only as ``**kwargs`` (documented in the docstring). The return
type is ``dict[str, Any]`` when the tool declares an output schema (its structured content), else ``str``.

Pure (no I/O).
"""

from __future__ import annotations

import json
import keyword
from collections.abc import Iterable, Mapping
from typing import Any

from registry.tool import ToolRecord

__all__ = ["render_stub", "render_stubs", "schema_type"]

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def schema_type(schema: Any, *, depth: int = 0) -> str:
    """The Python annotation for one JSON Schema (see module doc); ``Any`` past 4 levels."""
    if not isinstance(schema, Mapping) or depth > 4:
        return "Any"
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'])}]" if _literal_ok(schema["const"]) else "Any"
    if isinstance(schema.get("enum"), list) and schema["enum"] and all(_literal_ok(v) for v in schema["enum"]):
        return "Literal[" + ", ".join(json.dumps(v) if v is not None else "None" for v in schema["enum"]) + "]"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _union(schema_type(s, depth=depth + 1) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union(schema_type({**schema, "type": k}, depth=depth + 1) for k in kind)
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        return f"list[{schema_type(schema.get('items'), depth=depth + 1)}]"
    if kind == "object":
        return "dict[str, Any]"
    return "Any"


def render_stub(record: ToolRecord, identifier: str) -> str:
    """The stub of ``record`` under the script name ``identifier`` (see module doc)."""
    props = record.input_schema.get("properties") or {}
    required = set(record.input_schema.get("required") or [])
    params_req: list[str] = []
    params_opt: list[str] = []
    arg_docs: list[str] = []
    odd: list[str] = []
    for name, schema in props.items() if isinstance(props, Mapping) else ():
        annotation = schema_type(schema)
        if not name.isidentifier() or keyword.iskeyword(name):
            odd.append(name)
            continue
        if name in required:
            params_req.append(f"{name}: {annotation}")
        else:
            params_opt.append(f"{name}: {_optional(annotation)} = None")
        desc = schema.get("description") if isinstance(schema, Mapping) else None
        if desc:
            arg_docs.append(f"        {name}: {_one_line(desc)}")
    params = params_req + params_opt
    if odd:
        params.append("**kwargs: Any")
    signature = ", ".join((["*"] if params and not params[0].startswith("**") else []) + params)
    returns = "dict[str, Any]" if record.output_schema else "str"
    risk = record.risk.value + (" (open world)" if record.open_world else "")
    lines = [
        f"async def {identifier}({signature}) -> {returns}:",
        '    """' + (_one_line(record.description) or record.display_title),
    ]
    lines += ["", f"    Risk: {risk}. Tool: {record.qualified_name}."]
    if arg_docs:
        lines += ["    Args:", *arg_docs]
    if odd:
        lines.append("    Keyword-only via **kwargs: " + ", ".join(repr(n) for n in odd) + ".")
    lines += ['    """', ""]
    return "\n".join(lines)


def render_stubs(records: Iterable[ToolRecord], names: Mapping[str, str]) -> str:
    """Stubs of ``records`` under their identifiers (``names``: identifier → qualified name), with imports."""
    by_qualified = {q: i for i, q in names.items()}
    parts = ["from typing import Any, Literal", ""]
    for record in sorted(records, key=lambda r: r.qualified_name):
        parts.append(render_stub(record, by_qualified.get(record.qualified_name, record.qualified_name)))
    return "\n".join(parts)


def _union(parts: Iterable[str]) -> str:
    seen = list(dict.fromkeys(parts))
    return "Any" if "Any" in seen else " | ".join(seen)


def _optional(annotation: str) -> str:
    """``annotation`` with ``| None`` unless it admits ``None`` (``Any``, ``… | None``, ``Literal[…, None]``)."""
    parts = _top_level_parts(annotation)
    if annotation == "Any" or "None" in parts:
        return annotation
    literals = [p[8:-1] for p in parts if p.startswith("Literal[") and p.endswith("]")]
    if any("None" in _top_level_parts(inner, ", ") for inner in literals):
        return annotation
    return f"{annotation} | None"


def _top_level_parts(text: str, separator: str = " | ") -> list[str]:
    """``text`` split on ``separator`` outside brackets: ``list[int | None] | None`` → two parts."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i + len(separator)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _literal_ok(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split()).replace('"""', "'''")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

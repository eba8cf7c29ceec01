"""Schema dialects for OpenAI-compatible endpoints with a narrower schema language.

``gemini``: Gemini's function declarations take an OpenAPI-3.0 subset; its
OpenAI-compatible endpoint rejects the whole tool list on one unknown key ("Unknown name
additionalProperties", "Proto field is not repeating"). :func:`gemini_schema` therefore:

* inlines local refs (recursive ones become ``{"type": "object"}``, wider, noted);
* turns ``anyOf``/type lists with ``null`` into ``{"type": X, "nullable": true}``, ``const`` into
  ``enum: [v]`` (strings), a single-branch ``anyOf``/``allOf`` into its branch, ``oneOf`` into
  ``anyOf`` (wider);
* drops every other keyword (``additionalProperties``, ``$schema``, ``default``, ``examples``…),
  non-string ``enum`` and unsupported ``format`` values: all wider, never narrower (the pipeline
  validates calls against the original schema), each noted.

Source: Google AI "Function calling" (Schema object fields: type, format, title, description,
nullable, enum, properties, required, items, minItems, maxItems, minimum, maximum, anyOf, …).
"""

from __future__ import annotations

from typing import Any

from host.agent.providers.schema import (
    NormalizedSchema,
    find_ref_cycles,
    inline_refs,
    normalize_schema,
    walk_subschemas,
)

__all__ = ["GEMINI_KEYWORDS", "gemini_schema"]

GEMINI_KEYWORDS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "items",
        "anyOf",
        "propertyOrdering",
    }
)
_FORMATS = {"string": {"enum", "date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}
_QUIET = frozenset({"$schema", "$id", "$comment", "default", "examples", "deprecated", "readOnly", "writeOnly"})
_NULL = {"type": "null"}


def gemini_schema(schema: dict[str, Any] | None) -> NormalizedSchema:
    """Rewrite a tool input schema into the Gemini subset (see module docstring)."""
    norm = normalize_schema(schema)
    root, notes = norm.schema, list(norm.notes)
    cyclic = set(find_ref_cycles(root))
    if cyclic:

        def cut(node: dict[str, Any], path: str) -> None:
            if node.get("$ref") in cyclic:
                notes.append(f"{path}: recursive $ref {node.pop('$ref')!r} replaced by a plain object (wider)")
                node["type"] = "object"

        walk_subschemas({k: v for k, v in root.items() if k != "$defs"}, "$", cut)
        for name, sub in (root.get("$defs") or {}).items():
            walk_subschemas(sub, f"$.$defs.{name}", cut)
    return NormalizedSchema(schema=_convert(inline_refs(root), "$", notes), notes=notes)


def _convert(node: Any, path: str, notes: list[str]) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {}
    node = dict(node)
    nullable = False
    if "const" in node:
        value = node.pop("const")
        if isinstance(value, str):
            node.setdefault("enum", [value])
        else:
            notes.append(f"{path}.const {value!r} dropped (Gemini enums are strings; wider)")
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
        notes.append(f"{path}.oneOf treated as anyOf (wider)")
    all_of = node.pop("allOf", None)
    if isinstance(all_of, list):
        if len(all_of) == 1 and isinstance(all_of[0], dict):
            node = {**all_of[0], **node}
        else:
            notes.append(f"{path}.allOf dropped (wider)")
    typ = node.get("type")
    if isinstance(typ, list):
        nullable = "null" in typ
        kinds = [t for t in typ if t != "null"]
        if len(kinds) == 1:
            node["type"] = kinds[0]
        else:
            node.pop("type")
            if kinds:
                node["anyOf"] = [{"type": t} for t in kinds]
    elif typ == "null":
        node.pop("type")
        nullable = True
    branches = node.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if b != _NULL]
        nullable = nullable or len(kept) < len(branches)
        node.pop("anyOf")
        if len(kept) == 1 and isinstance(kept[0], dict) and "type" not in node:
            merged = {**kept[0], **node}
            out = _convert(merged, path, notes)
            if nullable:
                out["nullable"] = True
            return out
        if kept:
            node["anyOf"] = [_convert(b, f"{path}.anyOf[{i}]", notes) for i, b in enumerate(kept)]
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: _convert(v, f"{path}.properties.{k}", notes) for k, v in value.items()}
        elif key == "items":
            if isinstance(value, dict):
                out[key] = _convert(value, f"{path}.items", notes)
            else:
                notes.append(f"{path}.items tuple form dropped (wider)")
        elif key == "enum":
            strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
            if strings and node.get("type", "string") == "string":
                out[key] = value
                out.setdefault("type", "string")
            else:
                notes.append(f"{path}.enum dropped (Gemini enums are strings; wider)")
        elif key == "format":
            if value in _FORMATS.get(node.get("type"), set()):
                out[key] = value
            else:
                notes.append(f"{path}.format {value!r} dropped (wider)")
        elif key in GEMINI_KEYWORDS:
            out[key] = value
        elif key not in _QUIET:
            notes.append(f"{path}.{key} dropped (not in the Gemini schema subset; wider)")
    if out.get("properties") == {} and path != "$":
        out.pop("properties")  # Gemini: "properties should be non-empty for OBJECT type"
    if isinstance(out.get("required"), list):
        out["required"] = [r for r in out["required"] if r in out.get("properties", {})]
        if not out["required"]:
            out.pop("required")
    if nullable:
        out["nullable"] = True
    return out

"""OpenAI strict mode (``strict: true``) for tool schemas: check, convert, and decode arguments.

Source: OpenAI Structured Outputs, "Supported schemas" (function calling with ``strict: true``):
every object has ``additionalProperties: false`` and lists every property in ``required``;
optional values are expressed as nullable; supported keywords are ``type``, ``properties``,
``required``, ``additionalProperties``, ``items``, ``enum``, ``const``, ``anyOf``, ``$ref``/``$defs``
(recursion allowed), ``description``/``title``, string ``pattern`` and ``format`` (date-time, time,
date, duration, email, hostname, ipv4, ipv6, uuid), number ``multipleOf``/``minimum``/``maximum``/
``exclusiveMinimum``/``exclusiveMaximum``, array ``minItems``/``maxItems``. Root must be an object.

Conversion rule: **never narrow**. :func:`to_strict_schema` converts only when every value the
original accepts has an encoding the strict schema accepts, with these documented readings:

* An object that declares ``properties`` and does not set ``additionalProperties`` is read as
  closed: undeclared keys are not part of the tool's interface (the model cannot send them).
  ``additionalProperties: true``/a schema, ``patternProperties`` or an object (the root too)
  without ``properties`` and without ``additionalProperties: false`` is a free-form map and
  **cannot** be converted (a no-argument tool declares ``"properties": {}``).
* An optional property becomes required and nullable; ``null`` then means "absent" and
  :func:`decode_strict_arguments` removes it before validation. An optional property that is
  already nullable can only be converted when its ``default`` is ``null`` (absent ≡ null). A
  property with ``anyOf`` beside other keywords is wrapped as ``{"anyOf": [it, {"type": "null"}]}``.
* Draft-4 boolean ``exclusiveMinimum``/``exclusiveMaximum`` become the numeric form
  (:func:`host.agent.providers.schema.upgrade_draft4_bounds`) before ``$schema`` is dropped.
* Pure value constraints the API rejects (``minLength``, ``maxLength``, ``uniqueItems``,
  ``contains``, ``minProperties``, ``maxProperties``, unsupported ``format``) are dropped: that
  widens, never narrows (noted). Annotations (``default``, ``examples``…) are dropped silently.

Shapes that cannot be converted safely are reported as *problems* (``oneOf``, multi-branch
``allOf``, ``not``, ``if``/``then``/``else``, dependent keywords, tuples, root combinators,
untyped values, ``$ref`` with sibling constraints, optional+nullable without ``default: null``,
nesting deeper than 10): the tool is then declared with ``strict: false`` and the reason logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from host.agent.providers.arguments import (
    accepts_null,
    close_objects,
    decode_strict_arguments,
    encode_strict_arguments,
    make_validator,
    prepare_schema,
)
from host.agent.providers.schema import (
    declares_draft4,
    find_ref_cycles,
    normalize_schema,
    resolve_local_ref,
    upgrade_draft4_bounds,
)

__all__ = [
    "MAX_STRICT_DEPTH",
    "StrictConversion",
    "close_objects",
    "decode_strict_arguments",
    "encode_strict_arguments",
    "openai_parameters",
    "to_strict_schema",
]
# decode/encode/close_objects live in host.agent.providers.arguments; re-exported here for callers
# that think of them as part of strict mode.

MAX_STRICT_DEPTH = 10
"""Deepest object nesting OpenAI strict mode accepts."""

SUPPORTED_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
_KEPT = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "description",
        "title",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    }
)
_SILENT_DROP = frozenset({"default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "$schema", "$id"})
_WIDENING_DROP = frozenset(
    {
        "minLength",
        "maxLength",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
    }
)
_STRUCTURAL = frozenset(
    {
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "prefixItems",
        "additionalItems",
    }
)
_ABSENT = object()


@dataclass
class StrictConversion:
    """Outcome of :func:`to_strict_schema`.

    Attributes:
        schema: the strict schema, or ``None`` when the original cannot be converted safely.
        problems: why it cannot (one sentence per shape, with its JSON path); empty when ok.
        notes: widening changes made (dropped value constraints), for the log.
    """

    schema: dict[str, Any] | None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.schema is not None


class _Converter:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.validator = make_validator(root)
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.cyclic = set(find_ref_cycles(root))

    def convert(self, node: Any, path: str, depth: int, *, is_root: bool = False) -> dict[str, Any]:
        if not isinstance(node, dict):
            self.problems.append(f"{path}: boolean schema {node!r} cannot be strict")
            return {}
        if depth > MAX_STRICT_DEPTH:
            self.problems.append(f"{path}: nested deeper than {MAX_STRICT_DEPTH} levels")
            return {}
        node = {k: v for k, v in node.items() if k not in _SILENT_DROP}
        if "$ref" in node:
            return self._convert_ref(node, path, depth)
        for key in sorted(set(node) & _STRUCTURAL):
            if key == "allOf" and isinstance(node[key], list) and len(node[key]) == 1:
                continue
            self.problems.append(f"{path}.{key} is not supported in strict mode")
        for key in sorted(set(node) - _KEPT - _STRUCTURAL - _WIDENING_DROP):
            self.notes.append(f"{path}.{key}: unknown keyword dropped")
            node.pop(key)
        all_of = node.pop("allOf", None)
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            overlap = (set(all_of[0]) & set(node)) - {"description", "title"}
            if overlap:
                self.problems.append(f"{path}.allOf: keyword {sorted(overlap)[0]!r} also set beside it")
            merged = {**all_of[0], **node}
            return self.convert(merged, path, depth, is_root=is_root)
        for key in sorted(set(node) & _WIDENING_DROP):
            self.notes.append(f"{path}.{key} dropped (not supported in strict mode; calls still validated)")
            node.pop(key)
        if is_root and "anyOf" in node:
            self.problems.append(f"{path}.anyOf at the root is not allowed (root must be an object)")
        if "anyOf" in node:
            branches = node["anyOf"]
            if not isinstance(branches, list) or not branches:
                self.problems.append(f"{path}.anyOf must be a non-empty list")
            else:
                node["anyOf"] = [self.convert(b, f"{path}.anyOf[{i}]", depth) for i, b in enumerate(branches)]
        typ = node.get("type")
        types = set(typ) if isinstance(typ, list) else ({typ} if typ is not None else set())
        if is_root and typ is None and "anyOf" not in node:
            types = {"object"}
            node["type"] = "object"
        if not types and not {"enum", "const", "anyOf", *_STRUCTURAL} & set(node):
            self.problems.append(f"{path}: no type (accepts any value), which strict mode cannot express")
            return node
        if "object" in types:
            if types - {"object", "null"}:
                self.problems.append(f"{path}.type mixes object with {sorted(types - {'object', 'null'})}")
            self._convert_object(node, path, depth)
        if "array" in types:
            items = node.get("items")
            if not isinstance(items, dict):
                self.problems.append(f"{path}: array without an items schema (free-form list)")
            else:
                node["items"] = self.convert(items, f"{path}.items", depth + 1)
        fmt = node.get("format")
        if fmt is not None and fmt not in SUPPORTED_FORMATS:
            self.notes.append(f"{path}.format {fmt!r} dropped (not supported in strict mode)")
            node.pop("format")
        return node

    def _convert_ref(self, node: dict[str, Any], path: str, depth: int) -> dict[str, Any]:
        ref = node["$ref"]
        target = resolve_local_ref(self.root, ref) if isinstance(ref, str) else None
        if not isinstance(target, dict):
            self.problems.append(f"{path}.$ref {ref!r} is not a resolvable local reference")
            return node
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        constraints = set(siblings) - {"description", "title"}
        if not siblings:
            return {"$ref": ref}
        if ref in self.cyclic:
            if constraints:
                self.problems.append(f"{path}: recursive $ref {ref!r} with sibling constraints")
                return node
            return {"$ref": ref}
        clash = constraints & (set(target) - {"description", "title"})
        if clash:
            self.problems.append(f"{path}: $ref {ref!r} with sibling constraint {sorted(clash)[0]!r}")
            return node
        merged = {k: v for k, v in target.items() if k not in ("$defs", "definitions")}
        merged.update(siblings)
        return self.convert(merged, path, depth)

    def _convert_object(self, node: dict[str, Any], path: str, depth: int) -> None:
        extra = node.get("additionalProperties", _ABSENT)
        if extra is not _ABSENT and extra is not False:
            self.problems.append(f"{path}.additionalProperties: free-form map (keys not declared) cannot be strict")
        props = node.get("properties")
        if not isinstance(props, dict):
            if extra is _ABSENT:  # the root too: {"type": "object"} accepts any keys
                self.problems.append(f"{path}: object without properties (free-form map) cannot be strict")
            props = {}
        required = [r for r in node.get("required") or [] if isinstance(r, str)]
        for name in required:
            if name not in props:
                self.problems.append(f"{path}.required names {name!r}, which is not declared in properties")
        new_props: dict[str, Any] = {}
        for name, sub in props.items():
            sub_path = f"{path}.properties.{name}"
            converted = self.convert(sub, sub_path, depth + 1)
            if name not in required:
                if accepts_null(self.validator, sub):
                    if not (isinstance(sub, dict) and "default" in sub and sub["default"] is None):
                        self.problems.append(
                            f"{sub_path}: optional and nullable without default null (absent and null would merge)"
                        )
                else:
                    converted = _make_nullable(converted)
            new_props[name] = converted
        node["properties"] = new_props
        node["required"] = list(new_props)
        node["additionalProperties"] = False


def _make_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` or null. Beside ``anyOf``, other keywords (``type``, ``enum``…) reject null too, so wrap."""
    if "$ref" in node or "const" in node:
        return {"anyOf": [node, {"type": "null"}]}
    if "anyOf" in node and set(node) - {"anyOf", "description", "title"}:
        return {"anyOf": [node, {"type": "null"}]}
    if "anyOf" in node:
        if {"type": "null"} not in node["anyOf"]:
            node = {**node, "anyOf": [*node["anyOf"], {"type": "null"}]}
        return node
    typ = node.get("type")
    if typ is None:
        return {"anyOf": [node, {"type": "null"}]}
    types = list(typ) if isinstance(typ, list) else [typ]
    out = dict(node)
    if "null" not in types:
        out["type"] = [*types, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def to_strict_schema(schema: dict[str, Any] | None) -> StrictConversion:
    """Convert a tool ``inputSchema`` for OpenAI ``strict: true`` if that never narrows it.

    Args:
        schema: the original input schema (not modified).

    Returns:
        :class:`StrictConversion` with the schema, or ``schema=None`` and the problems found.
    """
    root = prepare_schema(schema if isinstance(schema, dict) else {"type": "object", "properties": {}})
    bound_notes = upgrade_draft4_bounds(root)  # before $schema is dropped: strict mode reads 2020-12
    conv = _Converter(root)
    if not declares_draft4(root):  # a boolean bound under a newer draft: read as draft 4 (noted)
        conv.notes.extend(bound_notes)
    defs = root.get("$defs")
    out = conv.convert({k: v for k, v in root.items() if k != "$defs"}, "$", 0, is_root=True)
    if isinstance(defs, dict):
        out["$defs"] = {name: conv.convert(sub, f"$.$defs.{name}", 1) for name, sub in defs.items()}
    if conv.problems:
        return StrictConversion(schema=None, problems=conv.problems, notes=conv.notes)
    return StrictConversion(schema=out, problems=[], notes=conv.notes)


def openai_parameters(
    name: str, schema: dict[str, Any] | None, *, strict: bool
) -> tuple[dict[str, Any], bool, list[str]]:
    """The ``parameters`` for an OpenAI function declaration: strict when safe, else normalized.

    Returns:
        ``(parameters, is_strict, notes)``; a note names the tool and why it is not strict.
    """
    if strict:
        conv = to_strict_schema(schema)
        if conv.ok and conv.schema is not None:
            return conv.schema, True, [f"{name}: {n}" for n in conv.notes]
        first = conv.problems[0]
        more = f" (+{len(conv.problems) - 1} more)" if len(conv.problems) > 1 else ""
        notes = [f"{name}: declared with strict=false because {first}{more}"]
    else:
        notes = []
    norm = normalize_schema(schema)
    return norm.schema, False, notes + [f"{name}: {n}" for n in norm.notes]

"""Input-schema normalization for provider tool declarations. Pure: no I/O.

MCP servers send any JSON Schema as ``inputSchema``; the model APIs accept less. This module
turns one schema into what an API accepts **without narrowing it** (the pipeline still validates
every call against the original schema, so widening is safe, narrowing is not):

* The root is ``{"type": "object", "properties": {...}}`` even when the server omitted
  ``type`` or ``properties`` (OpenAI 400 "object schema missing properties").
  A root ``anyOf``/``oneOf``/``allOf`` of object schemas (Anthropic 400 "input_schema does not
  support oneOf, allOf, or anyOf at the top level") is flattened into one object whose
  properties are the union and whose ``required`` is what every branch requires: wider, noted.
* Every nested ``type: object`` gets ``properties: {}`` when missing (same OpenAI rule).
* Draft-4 boolean ``exclusiveMinimum``/``exclusiveMaximum`` become the numeric draft-6+ form
  (``{"minimum": 0, "exclusiveMinimum": true}`` → ``{"exclusiveMinimum": 0}``) before
  ``$schema`` is dropped, so the APIs (which read 2020-12) keep the same bounds.
* ``definitions`` is renamed ``$defs`` and local refs rewritten; ``$schema``/``$id`` at the root
  are dropped. Local ``$ref``/``$defs`` are **kept** (all three APIs accept them; dropping ``$defs`` leaves a dangling
  ref); a
  dangling or remote ``$ref`` becomes ``{}`` (accepts anything, noted). :func:`inline_refs`
  dereferences local refs for callers that need it and raises :class:`SchemaCycle` on recursion.

Each change is reported as a note (a sentence naming the JSON path) so the caller can log it.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from host.agent.providers.errors import SchemaCycle

__all__ = [
    "ANNOTATION_KEYWORDS",
    "NormalizedSchema",
    "declares_draft4",
    "find_ref_cycles",
    "inline_refs",
    "normalize_schema",
    "resolve_local_ref",
    "upgrade_draft4_bounds",
    "walk_subschemas",
]

ANNOTATION_KEYWORDS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
)
"""Keywords that never change which values a schema accepts."""

_SUBSCHEMA_DICT_KEYS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SUBSCHEMA_KEYS = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
_SUBSCHEMA_LIST_KEYS = ("anyOf", "oneOf", "allOf", "prefixItems")


@dataclass
class NormalizedSchema:
    """A schema ready for a tool declaration, and what was changed to get there."""

    schema: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def walk_subschemas(node: Any, path: str, visit) -> None:
    """Call ``visit(node, path)`` on every subschema dict (pre-order)."""
    if not isinstance(node, dict):
        return
    visit(node, path)
    for key in _SUBSCHEMA_DICT_KEYS:
        sub = node.get(key)
        if isinstance(sub, dict):
            for name, child in sub.items():
                walk_subschemas(child, f"{path}.{key}.{name}", visit)
    for key in _SUBSCHEMA_KEYS:
        child = node.get(key)
        if isinstance(child, dict):
            walk_subschemas(child, f"{path}.{key}", visit)
        elif key == "items" and isinstance(child, list):  # draft-4..7 tuple form
            for i, c in enumerate(child):
                walk_subschemas(c, f"{path}.items[{i}]", visit)
    for key in _SUBSCHEMA_LIST_KEYS:
        children = node.get(key)
        if isinstance(children, list):
            for i, child in enumerate(children):
                walk_subschemas(child, f"{path}.{key}[{i}]", visit)


def resolve_local_ref(root: dict[str, Any], ref: str) -> Any:
    """The subschema a local JSON pointer ``#/...`` names in ``root``, or ``None`` when absent.

    Handles ``~0``/``~1`` escapes. Remote refs (not starting with ``#``) return ``None``.
    """
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def find_ref_cycles(root: dict[str, Any]) -> list[str]:
    """Local refs that (directly or through others) refer back to themselves, sorted."""
    edges: dict[str, set[str]] = {}

    def refs_below(node: Any) -> set[str]:
        found: set[str] = set()
        walk_subschemas(node, "$", lambda n, _p: found.add(n["$ref"]) if isinstance(n.get("$ref"), str) else None)
        return found

    pending = sorted(refs_below(root))
    while pending:
        ref = pending.pop()
        if ref in edges:
            continue
        target = resolve_local_ref(root, ref)
        edges[ref] = refs_below(target) if isinstance(target, dict) else set()
        pending.extend(r for r in edges[ref] if r not in edges)

    cyclic: set[str] = set()
    for start in edges:
        stack, seen = list(edges[start]), set()
        while stack:
            ref = stack.pop()
            if ref == start:
                cyclic.add(start)
                break
            if ref in seen:
                continue
            seen.add(ref)
            stack.extend(edges.get(ref, ()))
    return sorted(cyclic)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with every local ``$ref`` replaced by its target, ``$defs`` removed.

    Sibling keywords of a ``$ref`` are kept next to the inlined target (a sibling wins on a
    key clash, which only happens for annotations in schemas this is used on).

    Raises:
        SchemaCycle: a ref is recursive (it cannot be inlined); carries the refs involved.
    """
    cycles = find_ref_cycles(schema)
    if cycles:
        raise SchemaCycle(cycles)

    def expand(node: Any) -> Any:
        if isinstance(node, list):
            return [expand(x) for x in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = resolve_local_ref(schema, ref)
            if isinstance(target, dict):
                out.update(expand(target))
                out.pop("$defs", None)
                out.pop("definitions", None)
        for key, value in node.items():
            if key == "$ref" and isinstance(ref, str) and isinstance(resolve_local_ref(schema, ref), dict):
                continue
            if key in ("$defs", "definitions"):
                continue
            if key in ("properties", "patternProperties", "dependentSchemas") and isinstance(value, dict):
                out[key] = {k: expand(v) for k, v in value.items()}
            else:
                out[key] = expand(value)
        return out

    return expand(schema)


def declares_draft4(schema: dict[str, Any]) -> bool:
    """True when ``$schema`` names draft-04 or draft-03 (boolean ``exclusiveMinimum`` form)."""
    uri = schema.get("$schema")
    return isinstance(uri, str) and ("draft-04" in uri or "draft-03" in uri)


def upgrade_draft4_bounds(schema: dict[str, Any]) -> list[str]:
    """Rewrite draft-4 boolean ``exclusiveMinimum``/``exclusiveMaximum`` in place (every subschema).

    ``{"minimum": m, "exclusiveMinimum": true}`` → ``{"exclusiveMinimum": m}`` (same for the
    maximum); ``false``, or ``true`` without its bound, is removed (it constrains nothing in
    draft 4). Source: JSON Schema draft-06 release notes ("exclusiveMinimum/Maximum are now numbers").

    Returns:
        One note per rewritten keyword, naming its JSON path.
    """
    notes: list[str] = []

    def fix(node: dict[str, Any], path: str) -> None:
        for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            value = node.get(flag)
            if not isinstance(value, bool):
                continue
            limit = node.get(bound)
            if value and isinstance(limit, int | float) and not isinstance(limit, bool):
                node[flag] = node.pop(bound)
                notes.append(f"{path}.{flag}: draft-4 boolean form rewritten as {flag}: {limit!r}")
            else:
                node.pop(flag)
                notes.append(f"{path}.{flag}: draft-4 boolean {value!r} without effect removed")

    walk_subschemas(schema, "$", fix)
    return notes


def _rename_definitions(schema: dict[str, Any], notes: list[str]) -> None:
    defs = schema.pop("definitions", None)
    if not isinstance(defs, dict):
        return
    merged = dict(defs)
    merged.update(schema.get("$defs") or {})
    schema["$defs"] = merged
    notes.append("$.definitions renamed to $.$defs (refs rewritten)")

    def rewrite(node: dict[str, Any], _path: str) -> None:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/definitions/"):
            node["$ref"] = "#/$defs/" + ref[len("#/definitions/") :]

    walk_subschemas(schema, "$", rewrite)


def _flatten_root(schema: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """Replace a root ``anyOf``/``oneOf``/``allOf`` of objects by one wider object schema."""
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if not isinstance(branches, list) or not branches:
            continue
        resolved = []
        for b in branches:
            if isinstance(b, dict) and isinstance(b.get("$ref"), str):
                b = resolve_local_ref(schema, b["$ref"]) or {}
            resolved.append(b if isinstance(b, dict) else {})
        props: dict[str, Any] = {}
        required_sets: list[set[str]] = []
        for b in resolved:
            for name, sub in (b.get("properties") or {}).items():
                props.setdefault(name, sub)
            required_sets.append(set(b.get("required") or []))
        if key == "allOf":
            required = set().union(*required_sets)
            conflicts = {n for b in resolved for n, s in (b.get("properties") or {}).items() if props.get(n) != s}
            if conflicts:
                notes.append(f"$.allOf: property {sorted(conflicts)[0]!r} differs between branches; first kept")
        else:
            required = set.intersection(*required_sets) if required_sets else set()
        base = {k: v for k, v in schema.items() if k != key}
        base["type"] = "object"
        base.setdefault("properties", {}).update({k: v for k, v in props.items() if k not in base["properties"]})
        own = list(base.get("required") or [])
        base["required"] = own + sorted(required - set(own))
        if not base["required"]:
            base.pop("required")
        notes.append(f"$.{key} at the root flattened into one object schema (wider; calls still validated)")
        return base
    return schema


def normalize_schema(schema: dict[str, Any] | None) -> NormalizedSchema:
    """Normalize a tool's ``inputSchema`` for OpenAI Chat/Responses and Anthropic declarations.

    Args:
        schema: the tool's input schema as received (not modified).

    Returns:
        The normalized copy and notes (JSON path + what changed), see module docstring.
    """
    notes: list[str] = []
    out: dict[str, Any] = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    try:
        json.dumps(out)
    except (TypeError, ValueError):
        out = json.loads(json.dumps(out, default=str))
        notes.append("$: non-JSON values converted to strings")
    notes.extend(upgrade_draft4_bounds(out))
    for key in ("$schema", "$id"):
        if key in out:
            out.pop(key)
    _rename_definitions(out, notes)
    out = _flatten_root(out, notes)
    root_type = out.get("type")
    if root_type != "object":
        if root_type is not None:
            notes.append(f"$.type {root_type!r} replaced by 'object' (tool arguments are always an object)")
        out["type"] = "object"
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}

    def fix(node: dict[str, Any], path: str) -> None:
        t = node.get("type")
        is_object = t == "object" or (isinstance(t, list) and "object" in t)
        if is_object and not isinstance(node.get("properties"), dict):
            node["properties"] = {}
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = resolve_local_ref(out, ref)
            if target is None:
                kind = "remote" if not ref.startswith("#") else "dangling"
                node.pop("$ref")
                notes.append(f"{path}: {kind} $ref {ref!r} removed (accepts any value there)")

    walk_subschemas(out, "$", fix)
    return NormalizedSchema(schema=out, notes=notes)

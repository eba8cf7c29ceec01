"""Arguments under a strict declaration ↔ the original schema's terms (OpenAI strict mode).

Strict mode makes every property required and expresses "absent" as ``null`` for optional
properties (:mod:`host.agent.providers.strict`). :func:`decode_strict_arguments` maps what the model
produced back (drops those ``null`` values where the original does not accept ``null``) so the
pipeline validates and runs exactly what the original schema describes;
:func:`encode_strict_arguments` is its inverse; :func:`close_objects` is the closed reading of a
schema that strict conversion preserves exactly.
"""

from __future__ import annotations

import copy
from typing import Any

from jsonschema.validators import Draft202012Validator, validator_for

from host.agent.providers.schema import resolve_local_ref, walk_subschemas
from registry.validation import parse_arguments

__all__ = [
    "accepts_null",
    "close_objects",
    "decode_strict_arguments",
    "encode_strict_arguments",
    "make_validator",
    "parse_arguments_object",
    "prepare_schema",
]


def parse_arguments_object(text: str) -> dict[str, Any] | None:
    """Argument text as a JSON object (``{}`` for blank text), or ``None`` when it is not one.

    Uses :func:`registry.validation.parse_arguments` (which turns too-deep nesting into an
    error value); ``ValueError`` it lets through (an integer over Python's 4300-digit limit)
    also gives ``None``. Never raises.
    """
    try:
        parsed = parse_arguments(text)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def make_validator(root: dict[str, Any]):
    """A jsonschema validator for ``root`` (draft from ``$schema``, 2020-12 by default).

    ``validator.evolve(schema=sub)`` validates a subschema with refs resolved against ``root``.
    """
    cls = validator_for(root, default=Draft202012Validator)
    return cls(root)


def accepts_null(validator, sub: Any) -> bool:
    """True when subschema ``sub`` accepts ``null`` (refs resolved through ``validator``'s root)."""
    if not isinstance(sub, dict | bool):
        return False
    try:
        return validator.evolve(schema=sub).is_valid(None)
    except Exception:  # noqa: BLE001 - an unusable subschema: treat as not nullable
        return False


def prepare_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with ``definitions`` renamed ``$defs`` and ``$ref`` values rewritten.

    Only ``$ref`` values of subschemas change; an ``enum``/``const``/``default`` string that
    happens to start with ``#/definitions/`` is data and stays as is.
    """
    root = copy.deepcopy(schema)
    if isinstance(root.get("definitions"), dict):
        defs = root.pop("definitions")
        defs.update(root.get("$defs") or {})
        root["$defs"] = defs
        walk_subschemas(root, "$", _rewrite_definitions_ref)
    return root


def _rewrite_definitions_ref(node: dict[str, Any], _path: str) -> None:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/definitions/"):
        node["$ref"] = "#/$defs/" + ref[len("#/definitions/") :]


def _deref(root: dict[str, Any], node: Any) -> Any:
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 64:
        target = resolve_local_ref(root, node["$ref"])
        if not isinstance(target, dict):
            return node
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node


def _transcode(value: Any, node: Any, root: dict[str, Any], validator, *, encode: bool) -> Any:
    node = _deref(root, node)
    if not isinstance(node, dict):
        return value
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        node = {**_deref(root, all_of[0]), **{k: v for k, v in node.items() if k != "allOf"}}
    branches = node.get("anyOf")
    if isinstance(branches, list):
        for branch in branches:
            candidate = _transcode(value, branch, root, validator, encode=encode)
            check = candidate if not encode else value
            if validator.evolve(schema=_deref(root, branch)).is_valid(check):
                return candidate
    props = node.get("properties")
    if isinstance(value, dict) and isinstance(props, dict):
        required = set(node.get("required") or [])
        out: dict[str, Any] = {}
        for key, sub_value in value.items():
            sub = props.get(key)
            if sub is None:
                out[key] = sub_value
            elif not encode and sub_value is None and key not in required and not accepts_null(validator, sub):
                continue  # strict "null" for an optional, non-nullable property means "absent"
            else:
                out[key] = _transcode(sub_value, sub, root, validator, encode=encode)
        if encode:
            for key in props:
                if key not in out:
                    out[key] = None
            out = {key: out[key] for key in [*props, *[k for k in out if k not in props]]}
        return out
    items = node.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [_transcode(v, items, root, validator, encode=encode) for v in value]
    return value


def decode_strict_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Map arguments a model produced under the strict schema back to the original's terms.

    Removes ``null`` values of optional properties whose original schema does not accept
    ``null`` (strict mode's encoding of "absent"), at every level. Everything else is kept.

    Args:
        arguments: the parsed argument object.
        schema: the tool's **original** input schema.
    """
    root = prepare_schema(schema)
    return _transcode(arguments, root, root, make_validator(root), encode=False)


def encode_strict_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`decode_strict_arguments`: absent optional properties become ``null``.

    Used to replay, under a strict declaration, arguments written in the original's terms.
    """
    root = prepare_schema(schema)
    return _transcode(arguments, root, root, make_validator(root), encode=True)


def close_objects(schema: dict[str, Any]) -> dict[str, Any]:
    """The "closed" reading of ``schema`` that strict conversion preserves exactly.

    Every object subschema that declares ``properties`` gets ``additionalProperties: false``
    when it sets nothing; an object without ``properties`` (root included) stays a free-form
    map, which strict conversion reports instead of closing. Used by tests and docs.
    """
    out = prepare_schema(schema)

    def close(node: dict[str, Any], path: str) -> None:
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False

    walk_subschemas(out, "$", close)
    return out

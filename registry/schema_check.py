"""Per-tool checking of upstream tool definitions: repair what is harmless, hold what is invalid.

One bad tool must never take its server's other tools offline nor reach an
MCP client or a provider declaration. :func:`check_tool` looks at one raw
``tools/list`` entry (the wire dict, camelCase) on its own and returns a :class:`ToolCheck`:

* **repaired** (kept, with a warning): a missing ``inputSchema`` becomes
  ``{"type": "object", "properties": {}}``; a root without ``type`` gets ``"type": "object"``
  (and ``"properties": {}`` when it has none). Every other key is kept as it was (lossless).
* **held** (not registered, so not exported, searchable or callable; shown to admins with the
  reason): a ``name`` that is not a non-empty string, an ``inputSchema`` that is not an
  object, a root ``type`` other than ``"object"``, or a schema that fails meta-validation for
  its draft (``$schema``; 2020-12 when absent; JSON Schema §"Meta-schemas"). The reason names
  the tool, the JSON path of the offending keyword and the keyword. An ``outputSchema`` that
  fails meta-validation is dropped with a warning (the tool stays callable; results are then
  passed through unchecked).

Pure: no I/O. Uses :mod:`jsonschema` for the meta-validation.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.validators import Draft202012Validator, validator_for

__all__ = ["ToolCheck", "check_schema", "check_tool"]


@dataclass
class ToolCheck:
    """The outcome of checking one listed tool.

    Attributes:
        name: the tool's name (``"?"`` when it has none usable).
        tool: the (possibly repaired) wire dict to register, or ``None`` when held.
        warnings: repairs made and parts dropped, one line each, naming the tool.
        held_reason: why the tool is held (``None`` when it is kept).
    """

    name: str
    tool: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)
    held_reason: str | None = None

    @property
    def held(self) -> bool:
        return self.tool is None


def _json_path(parts: Any) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def check_schema(schema: Any) -> str | None:
    """``None`` when ``schema`` passes meta-validation for its draft, else a one-line problem.

    The problem names the JSON path and the keyword, e.g.
    ``$.properties.x.type: 'unknown' is not valid under any of the given schemas (keyword 'anyOf')``.
    """
    if not isinstance(schema, dict):
        return f"$: expected a JSON object, got {type(schema).__name__}"
    try:
        cls = validator_for(schema, default=Draft202012Validator)
    except Exception as exc:  # noqa: BLE001 - an unknown $schema URI
        return f"$.$schema: unknown draft {schema.get('$schema')!r} ({exc})"
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        best = exc
        where = _json_path(best.path)
        keyword = best.validator
        return f"{where}: {best.message} (keyword {keyword!r})"
    except Exception as exc:  # noqa: BLE001 - e.g. a recursion error on a pathological schema
        return f"$: cannot be checked ({type(exc).__name__}: {exc})"
    return None


def check_tool(raw: Any) -> ToolCheck:
    """Check (and losslessly repair) one raw ``tools/list`` entry; see the module docstring."""
    if not isinstance(raw, dict):
        return ToolCheck("?", None, held_reason=f"tools/list entry is a {type(raw).__name__}, not an object")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        return ToolCheck("?", None, held_reason=f"tools/list entry has no usable 'name' (got {name!r})")
    tool = copy.deepcopy(raw)
    out = ToolCheck(name, tool)
    if "inputSchema" not in tool or tool["inputSchema"] is None:
        tool["inputSchema"] = {"type": "object", "properties": {}}
        out.warnings.append(f"tool {name!r} has no inputSchema; using an empty object schema (no arguments)")
    schema = tool["inputSchema"]
    if not isinstance(schema, dict):
        return _hold(out, f"inputSchema must be a JSON object, got {type(schema).__name__}")
    if "type" not in schema:
        schema["type"] = "object"
        added = "'type': 'object'"
        if "properties" not in schema:
            schema["properties"] = {}
            added += " and 'properties': {}"
        out.warnings.append(f"tool {name!r}: inputSchema has no root 'type'; added {added}")
    elif schema["type"] != "object":
        return _hold(out, f"inputSchema root 'type' must be 'object' (MCP tools take a JSON object), "
                          f"got {schema['type']!r} (keyword 'type' at $.type)")
    problem = check_schema(schema)
    if problem is not None:
        return _hold(out, f"inputSchema fails meta-validation: {problem}")
    if "outputSchema" in tool and tool["outputSchema"] is not None:
        out_problem = check_schema(tool["outputSchema"])
        if out_problem is None and tool["outputSchema"].get("type", "object") != "object":
            out_problem = "$.type: root 'type' must be 'object' (keyword 'type')"
        if out_problem is not None:
            del tool["outputSchema"]
            out.warnings.append(f"tool {name!r}: outputSchema dropped (results pass unchecked): {out_problem}")
    return out


def _hold(out: ToolCheck, reason: str) -> ToolCheck:
    out.tool = None
    out.held_reason = reason
    out.warnings.append(f"tool {out.name!r} is held (not exported, searched or callable): {reason}")
    return out

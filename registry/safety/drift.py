"""Drift triage: what kind of change a tool's new definition is, and whether it may be accepted alone.

A pinned tool whose definition changes is held until an admin accepts it (``host.store.pins``,
the "rug pull" defence: https://policylayer.com/attacks/mcp-rug-pull). :func:`classify_drift`
sorts the change so that a typo fix and a silent risk downgrade do not look alike:

==========================  ==========================================================================
change kind                 when
==========================  ==========================================================================
``cosmetic``                title, description or a schema ``description``/``title``/``examples`` text
``schema_widened``          accepts more: a new optional property, a required one dropped, a type /
                            enum value added, a bound loosened, ``additionalProperties`` opened
``schema_narrowed``         accepts less: a property removed, a type / enum value removed, a bound
                            tightened, a ``pattern`` added, ``additionalProperties: false``
``schema_changed``          a schema keyword changed in a way neither wider nor narrower
``new_required_parameter``  a property became required (new or existing): old calls now fail
``output_schema_changed``   ``outputSchema`` differs (beyond cosmetic text)
``annotation_changed``      an annotation hint's effective value changed (absent = spec default:
                            readOnly false, destructive true, idempotent false, openWorld true)
``risk_downgrade``          ``destructiveHint`` true→false, ``readOnlyHint`` false→true or
                            ``openWorldHint`` true→false (the tool claims to be safer)
``new_url``                 a URL appears that the old definition did not have
``new_finding``             the poisoned-definition scanner finds something the old one did not have
``renamed``                 the tool's own name differs
==========================  ==========================================================================

:attr:`DriftClass.auto_acceptable` is true only when every change is ``cosmetic`` (no downgrade,
no new URL, no new scanner finding) — the only class config may accept without an admin.

Shapes: ``old`` / ``new`` are ``tools/list``-shaped dicts (what :func:`host.store.pins.definition_json`
stores, parsed), :class:`~registry.tool.ToolDefinition` or :class:`~registry.tool.ToolRecord`.
Pure; no I/O.
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from registry.safety.definition_scan import Finding, scan_definition, tool_document
from registry.tool import ToolDefinition, ToolRecord

__all__ = ["ANNOTATION_DEFAULTS", "MAX_DEPTH", "Change", "ChangeKind", "DriftClass", "classify_drift"]


class ChangeKind(str, enum.Enum):
    """One kind of difference (module docstring table)."""

    COSMETIC = "cosmetic"
    SCHEMA_WIDENED = "schema_widened"
    SCHEMA_NARROWED = "schema_narrowed"
    SCHEMA_CHANGED = "schema_changed"
    NEW_REQUIRED_PARAMETER = "new_required_parameter"
    OUTPUT_SCHEMA_CHANGED = "output_schema_changed"
    ANNOTATION_CHANGED = "annotation_changed"
    RISK_DOWNGRADE = "risk_downgrade"
    NEW_URL = "new_url"
    NEW_FINDING = "new_finding"
    RENAMED = "renamed"


ANNOTATION_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
"""Effective value of an absent hint (MCP spec ``ToolAnnotations``, 2025-11-25)."""

_SEVERITY = (ChangeKind.NEW_FINDING, ChangeKind.RISK_DOWNGRADE, ChangeKind.NEW_URL, ChangeKind.NEW_REQUIRED_PARAMETER,
             ChangeKind.SCHEMA_NARROWED, ChangeKind.SCHEMA_WIDENED, ChangeKind.SCHEMA_CHANGED,
             ChangeKind.OUTPUT_SCHEMA_CHANGED, ChangeKind.ANNOTATION_CHANGED, ChangeKind.RENAMED, ChangeKind.COSMETIC)
_DOWNGRADES = {"destructiveHint": (True, False), "readOnlyHint": (False, True), "openWorldHint": (True, False)}
_TEXT_KEYS = frozenset({"description", "title", "examples", "$comment", "markdownDescription"})
_URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s\"'<>`)\]]+|\b[\w.+-]+@[\w-]+\.[a-z]{2,}\b", re.IGNORECASE)
_MAX_BOUNDS = ("maxLength", "maximum", "exclusiveMaximum", "maxItems", "maxProperties")
_MIN_BOUNDS = ("minLength", "minimum", "exclusiveMinimum", "minItems", "minProperties")


@dataclass(frozen=True)
class Change:
    """One difference: kind, JSON path (``inputSchema.properties.limit.maximum``) and a detail for
    people (``100 → 1000``)."""

    kind: ChangeKind
    path: str
    detail: str

    def describe(self) -> str:
        """``schema_widened at inputSchema.properties.limit.maximum: 100 → 1000``."""
        return f"{self.kind.value} at {self.path}: {self.detail}"


@dataclass(frozen=True)
class DriftClass:
    """The triage of one change.

    Attributes:
        changes: every difference found, in definition order.
        new_findings: scanner findings of ``new`` that ``old`` did not have (by kind, rule and span).
        new_suspicious: the scanner calls ``new`` suspicious.
    """

    changes: tuple[Change, ...]
    new_findings: tuple[Finding, ...] = ()
    new_suspicious: bool = False

    @property
    def kinds(self) -> frozenset[ChangeKind]:
        """The change kinds present."""
        return frozenset(c.kind for c in self.changes)

    @property
    def risk_downgrade(self) -> bool:
        """The new definition claims less risk (never auto-accepted)."""
        return ChangeKind.RISK_DOWNGRADE in self.kinds

    @property
    def poisoning(self) -> bool:
        """The scanner finds something new, or calls the new definition suspicious."""
        return bool(self.new_findings) or self.new_suspicious

    @property
    def auto_acceptable(self) -> bool:
        """Only cosmetic changes, no downgrade, no new URL, no new or standing scanner finding."""
        return bool(self.changes) and self.kinds == {ChangeKind.COSMETIC} and not self.poisoning

    @property
    def label(self) -> str:
        """The classes, most serious first, e.g. ``risk_downgrade, schema_widened`` (``unchanged``)."""
        if not self.changes:
            return "unchanged"
        return ", ".join(k.value for k in _SEVERITY if k in self.kinds)

    def reasons(self) -> list[str]:
        """One line per change, then one per new scanner finding."""
        return [c.describe() for c in self.changes] + [f"new finding: {f.describe()}" for f in self.new_findings]


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    t = schema.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else {str(x) for x in t} if isinstance(t, list) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


MAX_DEPTH = 64
"""Schema nesting compared; deeper differences are one ``schema_changed``."""


def _schema_changes(old: Any, new: Any, path: str, depth: int = 0) -> Iterator[Change]:
    if depth > MAX_DEPTH:
        if old != new:
            yield Change(ChangeKind.SCHEMA_CHANGED, path, f"differs below nesting level {MAX_DEPTH} (not compared)")
        return
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        if old != new:
            yield Change(ChangeKind.SCHEMA_CHANGED, path, "schema replaced")
        return
    for key in sorted(_TEXT_KEYS & (set(old) | set(new))):
        if old.get(key) != new.get(key):
            yield Change(ChangeKind.COSMETIC, f"{path}.{key}", "text changed")
    ot, nt = _types(old), _types(new)
    if ot != nt:
        shown = f"{sorted(ot) if ot else 'any'} → {sorted(nt) if nt else 'any'}"
        if nt is None or (ot is not None and nt > ot):
            yield Change(ChangeKind.SCHEMA_WIDENED, f"{path}.type", shown)
        elif ot is None or nt < ot:
            yield Change(ChangeKind.SCHEMA_NARROWED, f"{path}.type", shown)
        else:
            yield Change(ChangeKind.SCHEMA_CHANGED, f"{path}.type", shown)
    oe, ne = old.get("enum"), new.get("enum")
    if oe != ne:
        if oe is None:
            yield Change(ChangeKind.SCHEMA_NARROWED, f"{path}.enum", "enum added")
        elif ne is None:
            yield Change(ChangeKind.SCHEMA_WIDENED, f"{path}.enum", "enum removed")
        else:
            added = [v for v in ne if v not in oe]
            removed = [v for v in oe if v not in ne]
            if removed:
                yield Change(ChangeKind.SCHEMA_NARROWED, f"{path}.enum", f"values removed: {removed!r}")
            if added:
                yield Change(ChangeKind.SCHEMA_WIDENED, f"{path}.enum", f"values added: {added!r}")
    for keys, wider_when_larger in ((_MAX_BOUNDS, True), (_MIN_BOUNDS, False)):
        for key in keys:
            a, b = _num(old.get(key)), _num(new.get(key))
            if a == b or (old.get(key) == new.get(key)):
                continue
            if a is None or b is None:
                widened = (b is None) if a is not None else False
                kind = ChangeKind.SCHEMA_WIDENED if widened else ChangeKind.SCHEMA_NARROWED
            else:
                kind = ChangeKind.SCHEMA_WIDENED if (b > a) == wider_when_larger else ChangeKind.SCHEMA_NARROWED
            yield Change(kind, f"{path}.{key}", f"{old.get(key)!r} → {new.get(key)!r}")
    for key in ("pattern", "format", "const"):
        if old.get(key) != new.get(key):
            kind = (ChangeKind.SCHEMA_NARROWED if key not in old else ChangeKind.SCHEMA_WIDENED if key not in new
                    else ChangeKind.SCHEMA_CHANGED)
            yield Change(kind, f"{path}.{key}", f"{old.get(key)!r} → {new.get(key)!r}")
    oa, na = old.get("additionalProperties", True), new.get("additionalProperties", True)
    if oa != na:
        if oa is False:
            yield Change(ChangeKind.SCHEMA_WIDENED, f"{path}.additionalProperties", f"{oa!r} → {na!r}")
        elif na is False:
            yield Change(ChangeKind.SCHEMA_NARROWED, f"{path}.additionalProperties", f"{oa!r} → {na!r}")
        else:
            yield from _schema_changes(oa, na, f"{path}.additionalProperties", depth + 1)
    op = old.get("properties") if isinstance(old.get("properties"), Mapping) else {}
    np_ = new.get("properties") if isinstance(new.get("properties"), Mapping) else {}
    oreq = set(old.get("required") or []) if isinstance(old.get("required"), list) else set()
    nreq = set(new.get("required") or []) if isinstance(new.get("required"), list) else set()
    for name in [*op, *(n for n in np_ if n not in op)]:
        sub = f"{path}.properties.{name}"
        if name not in np_:
            yield Change(ChangeKind.SCHEMA_NARROWED, sub, "property removed")
        elif name not in op:
            if name not in nreq:
                yield Change(ChangeKind.SCHEMA_WIDENED, sub, "optional property added")
        else:
            yield from _schema_changes(op[name], np_[name], sub, depth + 1)
    for name in sorted(nreq - oreq):
        yield Change(ChangeKind.NEW_REQUIRED_PARAMETER, f"{path}.required", f"{name!r} is now required")
    for name in sorted(oreq - nreq):
        yield Change(ChangeKind.SCHEMA_WIDENED, f"{path}.required", f"{name!r} is no longer required")
    for key in ("items", "not", "if", "then", "else"):
        if old.get(key) != new.get(key):
            yield from _schema_changes(old.get(key), new.get(key), f"{path}.{key}", depth + 1)
    handled = (_TEXT_KEYS | {"type", "enum", "pattern", "format", "const", "additionalProperties", "properties",
                             "required", "items", "not", "if", "then", "else", *_MAX_BOUNDS, *_MIN_BOUNDS})
    for key in sorted((set(old) | set(new)) - handled):
        if old.get(key) != new.get(key):
            yield Change(ChangeKind.SCHEMA_CHANGED, f"{path}.{key}", "keyword changed")


def _annotation_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterator[Change]:
    if old.get("title") != new.get("title"):
        yield Change(ChangeKind.COSMETIC, "annotations.title", "title changed")
    for hint, default in ANNOTATION_DEFAULTS.items():
        a, b = old.get(hint, default), new.get(hint, default)
        if a == b:
            continue
        shown = f"{old.get(hint, f'absent ({default})')} → {new.get(hint, f'absent ({default})')}".lower()
        if _DOWNGRADES.get(hint) == (a, b):
            yield Change(ChangeKind.RISK_DOWNGRADE, f"annotations.{hint}", shown)
        else:
            yield Change(ChangeKind.ANNOTATION_CHANGED, f"annotations.{hint}", shown)


def _urls(node: Any, depth: int = 0) -> Counter[str]:
    out: Counter[str] = Counter()
    if depth > MAX_DEPTH:
        return out
    if isinstance(node, str):
        out.update(m.group(0).rstrip(".,;:") for m in _URL.finditer(node))
    elif isinstance(node, Mapping):
        for k, v in node.items():
            out.update(_urls(str(k), depth + 1))
            out.update(_urls(v, depth + 1))
    elif isinstance(node, list | tuple):
        for v in node:
            out.update(_urls(v, depth + 1))
    return out


def classify_drift(
    old: Mapping[str, Any] | ToolDefinition | ToolRecord, new: Mapping[str, Any] | ToolDefinition | ToolRecord
) -> DriftClass:
    """Classify the change ``old`` → ``new`` (module docstring). Equal definitions give no changes."""
    o, n = tool_document(old), tool_document(new)
    changes: list[Change] = []
    if o.get("name") != n.get("name"):
        changes.append(Change(ChangeKind.RENAMED, "name", f"{o.get('name')!r} → {n.get('name')!r}"))
    for key in ("title", "description"):
        if (o.get(key) or "") != (n.get(key) or ""):
            changes.append(Change(ChangeKind.COSMETIC, key, f"{key} changed"))
    changes.extend(_schema_changes(o.get("inputSchema") or {}, n.get("inputSchema") or {}, "inputSchema"))
    if o.get("outputSchema") != n.get("outputSchema"):
        out = list(_schema_changes(o.get("outputSchema") or {}, n.get("outputSchema") or {}, "outputSchema"))
        changes.extend(c if c.kind is ChangeKind.COSMETIC else Change(ChangeKind.OUTPUT_SCHEMA_CHANGED, c.path, c.detail)
                       for c in out)
    changes.extend(_annotation_changes(o.get("annotations") or {}, n.get("annotations") or {}))
    new_urls = _urls(n) - _urls(o)
    changes.extend(Change(ChangeKind.NEW_URL, "definition", url) for url in sorted(new_urls))
    old_scan, new_scan = scan_definition(o), scan_definition(n)
    seen = Counter((f.kind, f.rule, f.span) for f in old_scan.findings)
    fresh: list[Finding] = []
    for f in new_scan.findings:
        key = (f.kind, f.rule, f.span)
        if seen[key] > 0:
            seen[key] -= 1
        else:
            fresh.append(f)
    if fresh:
        changes.append(Change(ChangeKind.NEW_FINDING, fresh[0].path, f"{len(fresh)} new scanner finding(s)"))
    return DriftClass(tuple(changes), tuple(fresh), new_scan.suspicious)

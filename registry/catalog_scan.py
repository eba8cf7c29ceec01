"""Poisoned prompts, resources, templates and server ``instructions``: the tool scanner on every
upstream text the model reads as a definition.

An upstream's prompt (name, title, description, each argument's name and description), resource and
resource template (name, title, description) and its handshake ``instructions`` reach the model as
much as a tool's description does, so each goes through the same scanner as tools
(:func:`registry.safety.scan_definition`, public entry point of :mod:`registry.safety`). A
suspicious item is *held*: not listed, not gettable/readable (:func:`screen_catalog`); suspicious
``instructions`` are left out of toolhost's merged ``instructions`` (:func:`screen_instructions`).
URIs are not scanned: a ``file:///home/me/.ssh/config`` resource names a local path by design.

Release (items have no pins): the operator lists what was read and trusted in the server's config,
``"toolhost": {"trust_definitions": ["prompt:summarize", "resource:page://news",
"template:file:///{path}", "instructions"]}`` (:func:`trust_key`). A trusted entry is served
whatever it says later, so trust an item, not a server you do not control.

Pure; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from registry.safety import ScanResult, escape_span, scan_definition

__all__ = ["INSTRUCTIONS", "SCAN_CACHE_SIZE", "HeldDefinition", "ScreenedCatalog", "item_document", "scan_item",
           "screen_catalog", "screen_instructions", "trust_key"]

DefinitionKind = Literal["prompt", "resource", "template", "instructions"]

INSTRUCTIONS = "instructions"
"""The ``trust_definitions`` entry that releases a server's handshake ``instructions``."""

_KEY = {"prompt": "name", "resource": "uri", "template": "uriTemplate"}

SCAN_CACHE_SIZE = 20_000
"""Item scans remembered by document text (:func:`scan_item`)."""


def trust_key(kind: DefinitionKind, original: str = "") -> str:
    """The ``trust_definitions`` entry releasing one item: ``prompt:<name>``, ``resource:<uri>``,
    ``template:<uri template>`` (the upstream's own name/URI), or ``instructions``."""
    return INSTRUCTIONS if kind == "instructions" else f"{kind}:{original}"


def item_document(kind: DefinitionKind, wire: Mapping[str, Any]) -> dict[str, Any]:
    """The tool-shaped document the scanner reads for one item (camelCase wire dict in):
    ``name``, ``title``, ``description`` and, for a prompt, its arguments as ``inputSchema``
    properties (name → ``{"description": ...}``)."""
    if kind == "instructions":
        return {"name": "instructions", "description": str(wire.get("text") or "")}
    doc: dict[str, Any] = {"name": str(wire.get("name") or ""), "description": str(wire.get("description") or "")}
    if wire.get("title"):
        doc["title"] = str(wire["title"])
    if kind == "prompt":
        props = {str(a.get("name") or ""): {"type": "string", "description": str(a.get("description") or "")}
                 for a in wire.get("arguments") or () if isinstance(a, Mapping)}
        doc["inputSchema"] = {"type": "object", "properties": props}
    return doc


@dataclass(frozen=True)
class HeldDefinition:
    """One held item: ``kind``, the upstream's ``original`` name/URI (``""`` for instructions),
    the ``server``, the scan whose findings hold it and the item's ``wire`` definition."""

    kind: DefinitionKind
    server: str
    original: str
    scan: ScanResult
    wire: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def trust_key(self) -> str:
        """Its ``trust_definitions`` entry (:func:`trust_key`)."""
        return trust_key(self.kind, self.original)

    def findings(self, limit: int = 3) -> str:
        """``"instruction 'Ignore all previous…' in description; concealment 'Do not tell…' in
        description"`` (the first ``limit`` findings, strongest first; escaped, bounded)."""
        lines = dict.fromkeys(f.message or f"{f.kind.value} '{escape_span(f.span, 60)}' in {f.path}"
                              for f in sorted(self.scan.findings, key=lambda f: not f.strong))
        parts = list(lines)[:limit]
        more = len(lines) - len(parts)
        return "; ".join(parts) + (f"; {more} more" if more > 0 else "")

    def release_hint(self) -> str:
        """How an admin releases it, as one sentence naming the config entry."""
        return (f'an admin who has read it releases it by adding "{self.trust_key}" to '
                f'"toolhost": {{"trust_definitions": [...]}} in the config entry of server {self.server!r}')

    def message(self, exposed: str) -> str:
        """The error a client gets for it (``exposed``: the name/URI the client used)."""
        return (f"toolhost: {self.kind} {exposed} of server {self.server!r} is held: its definition looks "
                f"poisoned ({self.findings()}); {self.release_hint()}")


@dataclass(frozen=True)
class ScreenedCatalog:
    """What :func:`screen_catalog` lets through (wire dicts per kind) and what it holds."""

    prompts: list[dict[str, Any]]
    resources: list[dict[str, Any]]
    templates: list[dict[str, Any]]
    held: tuple[HeldDefinition, ...]


@lru_cache(maxsize=SCAN_CACHE_SIZE)
def _scan(document: str) -> ScanResult:
    return scan_definition(json.loads(document))


def scan_item(kind: DefinitionKind, wire: Mapping[str, Any]) -> ScanResult:
    """The scan of one item (:func:`item_document` through :func:`registry.safety.scan_definition`),
    remembered by document text for the last :data:`SCAN_CACHE_SIZE` documents, so a re-list of
    unchanged items costs a JSON dump each, not a scan."""
    return _scan(json.dumps(item_document(kind, wire), sort_keys=True, ensure_ascii=False))


def _screen(kind: DefinitionKind, server: str, items: Iterable[dict[str, Any]], trusted: Collection[str],
            held: list[HeldDefinition]) -> list[dict[str, Any]]:
    kept = []
    for wire in items:
        original = str(wire.get(_KEY[kind]) or "")
        scan = scan_item(kind, wire)
        if scan.suspicious and trust_key(kind, original) not in trusted:
            held.append(HeldDefinition(kind, server, original, scan, wire))
        else:
            kept.append(wire)
    return kept


def screen_catalog(server: str, *, prompts: Iterable[dict[str, Any]] = (), resources: Iterable[dict[str, Any]] = (),
                   templates: Iterable[dict[str, Any]] = (), trusted: Collection[str] = ()) -> ScreenedCatalog:
    """Scan one server's listing; suspicious items not in ``trusted`` (``trust_definitions``) are held."""
    held: list[HeldDefinition] = []
    return ScreenedCatalog(_screen("prompt", server, prompts, trusted, held),
                           _screen("resource", server, resources, trusted, held),
                           _screen("template", server, templates, trusted, held), tuple(held))


def screen_instructions(server: str, text: str | None, trusted: Collection[str] = ()) -> HeldDefinition | None:
    """The hold for a server's handshake ``instructions`` (``None``: clean, absent or trusted)."""
    if not text or INSTRUCTIONS in trusted:
        return None
    scan = scan_item("instructions", {"text": text})
    return HeldDefinition("instructions", server, "", scan) if scan.suspicious else None

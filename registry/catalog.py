"""Prompts, resources and resource templates of every server, namespaced like tools.

Naming (reversible, so every request maps back to the upstream's original name or URI):

* **Prompts** get qualified names exactly like tools (:func:`registry.naming.qualify`): prompt
  ``review`` of a server with prefix ``git`` is ``git__review``.
* **Resources and templates** get URIs of the form ``toolhost://<prefix>/<original URI>``:
  ``file:///docs/readme.md`` of server ``docs`` is ``toolhost://docs/file:///docs/readme.md``,
  template ``file:///{path}`` is ``toolhost://docs/file:///{path}``. A prefix never contains
  ``/``, so the first ``/`` after ``toolhost://`` always ends it (:func:`split_uri`). Tool
  results use the same scheme for ``resource_link`` and embedded resources, so a URI a tool
  returned can be read back with ``resources/read``.
* With ``toolhost.prefix: ""`` names and URIs stay the original ones; a clash with another
  server is refused (:class:`registry.NameConflict`, naming both servers).

Permissions: every item has a **grant name** matched by grant patterns exactly like a tool's
qualified name (see :mod:`registry.permissions`): a prompt's grant name is its qualified name,
a resource's or template's is ``<prefix>__<sanitized resource name>``. So ``server:git`` and
``git__*`` cover all of server ``git``'s tools, prompts and resources, and ``deny git__secrets``
hides a prompt or resource named ``secrets``. Items are ``read`` risk and never need approval.

Pure: no I/O; definitions are kept as JSON-ready dicts (camelCase wire form).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from registry.errors import NameConflict
from registry.naming import qualify, sanitize_part
from registry.tool import Risk, ToolAnnotations, ToolRecord

__all__ = ["URI_SCHEME", "Catalog", "CatalogItem", "ItemKind", "qualify_uri", "split_uri"]

URI_SCHEME = "toolhost"
"""Scheme of namespaced resource URIs: ``toolhost://<prefix>/<original URI>``."""

ItemKind = Literal["prompt", "resource", "template"]
_URI_PREFIX = f"{URI_SCHEME}://"
_TEMPLATE_VAR = re.compile(r"\{[^}]*\}")


def qualify_uri(prefix: str, uri: str) -> str:
    """The URI clients see for ``uri`` of a server with ``prefix`` (``""``: unchanged)."""
    return f"{_URI_PREFIX}{prefix}/{uri}" if prefix else uri


def split_uri(uri: str) -> tuple[str, str] | None:
    """``(prefix, original URI)`` of a namespaced URI, or ``None`` when ``uri`` is not one."""
    if not uri.startswith(_URI_PREFIX):
        return None
    prefix, sep, original = uri[len(_URI_PREFIX) :].partition("/")
    if not sep or not prefix or not original:
        return None
    return prefix, original


@dataclass(frozen=True)
class CatalogItem:
    """One prompt, resource or resource template of one server.

    Attributes:
        kind: ``prompt``, ``resource`` or ``template``.
        server: owning server (config name).
        original: the upstream's prompt name, resource URI or URI template.
        exposed: what clients see (qualified prompt name or namespaced URI / template).
        grant_name: the name grant patterns are matched against (see module docstring).
        wire: the upstream definition (camelCase JSON) with ``name``/``uri``/``uriTemplate``
            replaced by the exposed one.
    """

    kind: ItemKind
    server: str
    original: str
    exposed: str
    grant_name: str
    wire: Mapping[str, Any]

    def as_record(self) -> ToolRecord:
        """A read-risk stand-in :class:`ToolRecord` so any :class:`registry.Policy` can judge the item."""
        return ToolRecord(
            qualified_name=self.grant_name,
            server=self.server,
            original_name=self.original,
            description=str(self.wire.get("description") or ""),
            input_schema={"type": "object"},
            annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False),
            risk=Risk.READ,
            open_world=False,
            timeout_seconds=60.0,
            max_output_chars=1,
            concurrency_safe=True,
            idempotent=True,
            definition_hash=f"{self.kind}:{self.exposed}",
        )


@dataclass(frozen=True)
class ServerItems:
    """One server's prompts, resources and templates (listing order)."""

    prefix: str
    prompts: tuple[CatalogItem, ...] = ()
    resources: tuple[CatalogItem, ...] = ()
    templates: tuple[CatalogItem, ...] = ()

    def all(self) -> tuple[CatalogItem, ...]:
        return self.prompts + self.resources + self.templates


@dataclass
class Catalog:
    """Every server's prompts, resources and templates, with reverse lookups.

    Writers replace one server's items at a time (:meth:`replace_server`); readers see the old or
    the new set, never half of one (each change is one assignment under a single event loop).
    """

    _servers: Mapping[str, ServerItems] = field(default_factory=lambda: MappingProxyType({}))
    _prompts: Mapping[str, CatalogItem] = field(default_factory=lambda: MappingProxyType({}))
    _resources: Mapping[str, CatalogItem] = field(default_factory=lambda: MappingProxyType({}))
    version: int = 0

    # -- writing -----------------------------------------------------------------------
    def replace_server(
        self,
        server: str,
        prefix: str,
        *,
        prompts: Iterable[Mapping[str, Any]] = (),
        resources: Iterable[Mapping[str, Any]] = (),
        templates: Iterable[Mapping[str, Any]] = (),
    ) -> ServerItems:
        """Replace ``server``'s items with new upstream definitions (camelCase dicts).

        Duplicate names/URIs within one server keep the first definition.

        Raises:
            NameConflict: an exposed prompt name or resource URI is already another server's
                (only possible with ``prefix: ""``); the catalog is left unchanged.
        """
        items = ServerItems(
            prefix=prefix,
            prompts=_dedupe(_prompt(server, prefix, p) for p in prompts),
            resources=_dedupe(_resource(server, prefix, r, "resource") for r in resources),
            templates=_dedupe(_resource(server, prefix, t, "template") for t in templates),
        )
        servers = {k: v for k, v in self._servers.items() if k != server}
        prompt_map = {k: v for k, v in self._prompts.items() if v.server != server}
        res_map = {k: v for k, v in self._resources.items() if v.server != server}
        for item in items.prompts:
            _claim(prompt_map, item)
        for item in items.resources + items.templates:
            _claim(res_map, item)
        servers[server] = items
        self._servers = MappingProxyType(servers)
        self._prompts = MappingProxyType(prompt_map)
        self._resources = MappingProxyType(res_map)
        self.version += 1
        return items

    def remove_server(self, server: str) -> None:
        """Forget every item of ``server``."""
        if server in self._servers:
            self.replace_server(server, self._servers[server].prefix)
            self._servers = MappingProxyType({k: v for k, v in self._servers.items() if k != server})

    # -- reading -----------------------------------------------------------------------
    def servers(self) -> Mapping[str, ServerItems]:
        return self._servers

    def items(self, kind: ItemKind) -> list[CatalogItem]:
        """Every item of ``kind``, in server then listing order."""
        out: list[CatalogItem] = []
        for items in self._servers.values():
            out.extend(items.prompts if kind == "prompt"
                       else items.resources if kind == "resource" else items.templates)
        return out

    def prompt(self, name: str) -> CatalogItem | None:
        """The prompt exposed as ``name``, or ``None``."""
        return self._prompts.get(name)

    def resource(self, uri: str) -> CatalogItem | None:
        """The listed resource exposed as ``uri``, or ``None``."""
        item = self._resources.get(uri)
        return item if item is not None and item.kind == "resource" else None

    def template(self, uri_template: str) -> CatalogItem | None:
        """The template exposed as ``uri_template``, or ``None``."""
        item = self._resources.get(uri_template)
        return item if item is not None and item.kind == "template" else None

    def route_uri(self, uri: str) -> tuple[str, str, CatalogItem | None] | None:
        """Where a client URI goes: ``(server, original URI, covering item)`` or ``None`` (unknown).

        A listed resource routes to its server; otherwise a URI of a server's template routes
        there (the covering item is that template, for permission checks). Namespaced URIs
        only reach the server of their prefix; un-namespaced ones only servers with ``prefix: ""``.
        """
        listed = self.resource(uri)
        if listed is not None:
            return listed.server, listed.original, listed
        split = split_uri(uri)
        for server, items in self._servers.items():
            if split is not None and items.prefix == split[0]:
                original = split[1]
            elif split is None and items.prefix == "":
                original = uri
            else:
                continue
            for t in items.templates:
                if _template_matches(t.original, original):
                    return server, original, t
        return None


def _template_matches(template: str, uri: str) -> bool:
    """Whether ``uri`` can be an expansion of RFC 6570 ``template`` (variables match any text)."""
    parts = _TEMPLATE_VAR.split(template)
    pattern = ".*".join(re.escape(p) for p in parts)
    return re.fullmatch(pattern, uri, flags=re.DOTALL) is not None


def _grant_name(prefix: str, name: str) -> str:
    return qualify(prefix, name)


def _prompt(server: str, prefix: str, wire: Mapping[str, Any]) -> CatalogItem:
    name = str(wire["name"])
    exposed = name if not prefix else qualify(prefix, name, server=server)
    return CatalogItem("prompt", server, name, exposed, exposed, MappingProxyType({**wire, "name": exposed}))


def _resource(server: str, prefix: str, wire: Mapping[str, Any], kind: ItemKind) -> CatalogItem:
    key = "uri" if kind == "resource" else "uriTemplate"
    original = str(wire[key])
    exposed = qualify_uri(prefix, original)
    grant = _grant_name(prefix, sanitize_part(str(wire.get("name") or original)))
    return CatalogItem(kind, server, original, exposed, grant, MappingProxyType({**wire, key: exposed}))


def _dedupe(items: Iterable[CatalogItem]) -> tuple[CatalogItem, ...]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item.exposed not in seen:
            seen.add(item.exposed)
            out.append(item)
    return tuple(out)


def _claim(mapping: dict[str, CatalogItem], item: CatalogItem) -> None:
    other = mapping.get(item.exposed)
    if other is not None:
        raise NameConflict(item.exposed, (other.server, other.original), (item.server, item.original))
    mapping[item.exposed] = item

"""Held prompts, resources, templates and ``instructions`` of every server (poisoned definitions).

:class:`CatalogHolds` runs :func:`registry.catalog_scan.screen_catalog` on each listing before the
manager puts it in the catalog (so a held item is never listed, gettable or readable) and keeps the
held items in a catalog of their own, so the gateway can answer a request for one with the reason
and how an admin releases it (:meth:`CatalogHolds.prompt`, :meth:`CatalogHolds.resource`,
:meth:`CatalogHolds.template`) instead of "unknown". Every listing is screened again (on
``list_changed`` too); a server's handshake ``instructions`` are screened on every connect
(:meth:`CatalogHolds.screen_instructions`). A new hold is logged (``toolhost.upstream`` logger,
warning), written to the server's status (``events`` and ``warnings``: ``toolhost servers``, the
console) and told to every listener (:meth:`CatalogHolds.subscribe`; ``toolhost serve``'s event
line ``definitions.held`` and audit row ``catalog:suspicious``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import replace

from host.upstream.catalog import UpstreamCatalog
from host.upstream.status import ServerStatus
from registry.catalog import Catalog, CatalogItem
from registry.catalog_scan import HeldDefinition, screen_catalog, screen_instructions
from registry.errors import NameConflict

__all__ = ["HELD_PREFIX", "CatalogHolds", "HoldListener"]

logger = logging.getLogger("toolhost.upstream")

HELD_PREFIX = "held definition: "
"""How a hold's line in a server's status ``warnings`` starts."""

HoldListener = Callable[[str, list[HeldDefinition]], None]
"""``listener(server, new_holds)``: called synchronously for holds not reported before."""


class CatalogHolds:
    """Held catalog items per server (see module docstring). ``items`` is a
    :class:`registry.catalog.Catalog` of the held items only (same names and URIs clients see)."""

    def __init__(self, trusted_of: Callable[[str], Collection[str]] = lambda _server: ()) -> None:
        self.items = Catalog()
        self.listeners: list[HoldListener] = []
        self._trusted_of = trusted_of
        self._held: dict[str, dict[tuple[str, str], HeldDefinition]] = {}
        self._instructions: dict[str, tuple[str | None, str | None]] = {}

    def screen(self, server: str, prefix: str, listing: UpstreamCatalog,
               status: ServerStatus | None = None) -> UpstreamCatalog:
        """The part of ``listing`` that may be served; the rest is held (replacing the server's
        previous holds of prompts, resources and templates)."""
        screened = screen_catalog(server, prompts=listing.prompts, resources=listing.resources,
                                  templates=listing.templates, trusted=self._trusted_of(server))
        wires = {kind: [dict(h.wire) for h in screened.held if h.kind == kind]
                 for kind in ("prompt", "resource", "template")}
        try:
            self.items.replace_server(server, prefix, prompts=wires["prompt"], resources=wires["resource"],
                                      templates=wires["template"])
        except NameConflict:  # a held item's name clashes with another server's: it stays held, answered as unknown
            pass
        holds = {(h.kind, h.original): h for h in screened.held}
        self._replace(server, holds, status, keep=lambda kind: kind == "instructions")
        return replace(listing, prompts=screened.prompts, resources=screened.resources,
                       templates=screened.templates)

    def screen_instructions(self, status: ServerStatus) -> str | None:
        """``status.instructions`` when they may be merged into toolhost's ``instructions``, else
        ``None`` (absent or held). Scanned once per text (cheap to call per ``initialize``)."""
        server, text = status.name, status.instructions
        seen = self._instructions.get(server)
        if seen is not None and seen[0] == text:
            self._show(server, status)  # a tools re-list rewrote the status warnings
            return seen[1]
        hold = screen_instructions(server, text, self._trusted_of(server))
        self._replace(server, {("instructions", ""): hold} if hold is not None else {}, status,
                      keep=lambda kind: kind != "instructions")
        verdict = None if hold is not None else text
        self._instructions[server] = (text, verdict)
        return verdict

    def subscribe(self, listener: HoldListener) -> None:
        """Add ``listener`` and tell it the holds made before it came (one call per server)."""
        self.listeners.append(listener)
        for server, holds in list(self._held.items()):
            if holds:
                listener(server, list(holds.values()))

    def remove_server(self, server: str) -> None:
        """Forget ``server``'s holds (it left the config)."""
        self._held.pop(server, None)
        self._instructions.pop(server, None)
        if server in self.items.servers():
            self.items.remove_server(server)

    def held(self, server: str | None = None) -> list[HeldDefinition]:
        """Every current hold (of ``server`` only, when given)."""
        return [h for s, holds in self._held.items() if server in (None, s) for h in holds.values()]

    def _lookup(self, item: CatalogItem | None) -> tuple[CatalogItem, HeldDefinition] | None:
        if item is None:
            return None
        hold = self._held.get(item.server, {}).get((item.kind, item.original))
        return (item, hold) if hold is not None else None

    def prompt(self, name: str) -> tuple[CatalogItem, HeldDefinition] | None:
        """The held prompt clients call ``name`` and its hold, else ``None``."""
        return self._lookup(self.items.prompt(name))

    def resource(self, uri: str) -> tuple[CatalogItem, HeldDefinition] | None:
        """The held resource (or held template matching) ``uri``, else ``None``."""
        route = self.items.route_uri(uri)
        return self._lookup(route[2]) if route is not None else None

    def template(self, uri_template: str) -> tuple[CatalogItem, HeldDefinition] | None:
        """The held template clients see as ``uri_template``, else ``None``."""
        return self._lookup(self.items.template(uri_template))

    def _replace(self, server: str, holds: dict[tuple[str, str], HeldDefinition], status: ServerStatus | None,
                 *, keep: Callable[[str], bool]) -> None:
        """Set ``server``'s holds to ``holds`` plus its current ones whose kind ``keep`` accepts;
        report the new ones."""
        before = self._held.get(server, {})
        holds |= {k: h for k, h in before.items() if keep(k[0])}
        self._held[server] = holds
        fresh = [h for k, h in holds.items() if k not in before or before[k].scan != h.scan]
        for hold in fresh:
            logger.warning("%s: %s", server, _line(hold))
            if status is not None:
                status.record_event(_line(hold))
        self._show(server, status)
        if fresh:
            for listener in list(self.listeners):
                listener(server, fresh)

    def _show(self, server: str, status: ServerStatus | None) -> None:
        """Make ``status.warnings`` list exactly the server's current holds (one line each)."""
        if status is not None:
            status.warnings[:] = [w for w in status.warnings if not w.startswith(HELD_PREFIX)] + [
                _line(h) for h in self._held.get(server, {}).values()]


def _line(hold: HeldDefinition) -> str:
    what = "instructions" if hold.kind == "instructions" else f"{hold.kind} {hold.original!r}"
    return f"{HELD_PREFIX}{what} looks poisoned ({hold.findings()}); {hold.release_hint()}"

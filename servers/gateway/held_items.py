"""The answer to a request for a held prompt, resource or template (poisoned-looking definition).

A held item (:class:`host.upstream.catalog_holds.CatalogHolds`) is never listed; a ``prompts/get``,
``resources/read``, ``resources/subscribe`` or ``completion/complete`` naming one gets ``-32602``
with the findings and the ``trust_definitions`` entry an admin adds to release it
(``data``: ``{"held": true, "server", "trust"}``) — but only when the caller may see the item
under its grants; otherwise the caller gets the usual "unknown" answer, so held items cannot be
probed either.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp import MCPError
from mcp.types import INVALID_PARAMS

from registry.catalog import CatalogItem
from registry.catalog_scan import HeldDefinition

__all__ = ["held_error"]


def held_error(found: tuple[CatalogItem, HeldDefinition] | None, visible: Callable[[CatalogItem], bool],
               unknown: MCPError) -> MCPError:
    """The error for a request that named a held item (``found``) if the caller may see it, else ``unknown``."""
    if found is None or not visible(found[0]):
        return unknown
    item, hold = found
    return MCPError(INVALID_PARAMS, hold.message(item.exposed),
                    {"held": True, "server": hold.server, "trust": hold.trust_key})

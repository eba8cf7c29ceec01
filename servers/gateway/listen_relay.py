"""``subscriptions/listen`` for toolhost's own 2026-07-28 clients (MCP 2026-07-28, SEP-2575).

At 2026-07-28 there is no standing notification channel: a client opens a
``subscriptions/listen`` request whose response is its event stream. :class:`ListenRelay` serves
it with the SDK's :class:`mcp.server.subscriptions.ListenHandler` and publishes what
handshake-era clients get as plain notifications:

* ``notifications/tools/list_changed`` after every burst of registry changes (an upstream
  connected, reconnected or announced new tools; published by
  :class:`servers.gateway.notify.ToolsChangedNotifier`, which shares :attr:`ListenRelay.bus`);
* ``notifications/prompts/list_changed`` and ``.../resources/list_changed`` when an upstream's
  prompts, resources or templates change;
* ``notifications/resources/updated`` for every exposed URI named in the stream's
  ``resourceSubscriptions`` that the caller may see: toolhost subscribes upstream for the
  stream's lifetime (shared with ``resources/subscribe`` of handshake-era clients, one upstream
  subscription per URI) and unsubscribes when the stream ends. A hidden URI is acknowledged like
  an unknown one and never fires, so URIs cannot be probed.

Bounds: at most :data:`MAX_STREAMS` open streams (more answer ``-32603`` ``toolhost: too many
open subscriptions/listen streams``), of which one API key may hold :data:`MAX_STREAMS_PER_CALLER`
(its share: more answer ``-32603`` naming the share and the way out, ``data``
``{"share": N, "open": N}``; unauthenticated open-access clients cannot be told apart, so they
have only the global bound), at most :data:`MAX_URIS` URIs per stream (``-32602``),
:data:`MAX_BACKLOG` undelivered events per stream (a client that stops reading loses its stream
and re-listens, per the spec's "no replay" rule). Upstream subscriptions are made before the
acknowledgement, each bounded by the server's request timeout; one that fails (upstream gone,
no subscribe support) is logged and that URI simply never fires.

2026-07-28 exchanges are stateless, so ``tool_search`` does not change their ``tools/list``
(found tools are called through ``call_tool`` or by name): there is no per-client list change
to announce to them.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, SubscriptionBus
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
)
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, SubscriptionsListenRequestParams, SubscriptionsListenResult

from servers.gateway.catalog import CatalogHandlers
from servers.gateway.request_view import RequestView

__all__ = ["MAX_BACKLOG", "MAX_STREAMS", "MAX_STREAMS_PER_CALLER", "MAX_URIS", "ListenRelay"]

MAX_STREAMS = 512
"""Open ``subscriptions/listen`` streams served at once (all clients together)."""
MAX_STREAMS_PER_CALLER = MAX_STREAMS // 8
"""Open streams one API key may hold (its share of :data:`MAX_STREAMS`)."""
MAX_URIS = 256
"""Resource URIs one listen stream may watch."""
MAX_BACKLOG = 256
"""Events buffered for one stream whose client is not reading; the stream ends beyond it."""

log = logging.getLogger("toolhost.listen")


class _Watcher:
    """One listen stream's place among a URI's subscribers (its updates travel on the bus)."""

    async def notify(self, method: str, params: Any) -> None:
        return None


class _VisibleBus:
    """A view of the shared bus for one stream: resource updates only for the URIs it may see."""

    def __init__(self, bus: SubscriptionBus, uris: frozenset[str]) -> None:
        self._bus = bus
        self._uris = uris

    async def publish(self, event: ServerEvent) -> None:
        await self._bus.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        def visible_only(event: ServerEvent) -> None:
            if not isinstance(event, ResourceUpdated) or event.uri in self._uris:
                listener(event)

        return self._bus.subscribe(visible_only)


class ListenRelay:
    """The ``on_subscriptions_listen`` handler of the registry server (module docstring).

    Args:
        catalog: the registry server's prompt/resource handlers (routing, visibility, upstream
            subscriptions); the relay registers itself with its manager's catalog and resource
            listeners.
        bus: where events are published (default: a new in-process bus).
    """

    def __init__(self, catalog: CatalogHandlers, bus: SubscriptionBus | None = None) -> None:
        self.catalog = catalog
        self.bus: SubscriptionBus = bus if bus is not None else InMemorySubscriptionBus()
        self._open: set[ListenHandler] = set()
        self._per_caller: Counter[str] = Counter()
        self.share = MAX_STREAMS_PER_CALLER
        """Open streams one API key may hold."""
        catalog.manager.catalog_listeners.append(self._catalog_changed)
        catalog.manager.resource_listeners.append(self._resource_updated)

    @property
    def open_streams(self) -> int:
        """How many listen streams are being served now."""
        return len(self._open)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        """Serve one stream until the client leaves or :meth:`close` (see module docstring).

        Raises:
            MCPError: ``-32602`` more than :data:`MAX_URIS` URIs; ``-32603`` more than
                :data:`MAX_STREAMS` open streams, or than :attr:`share` of this API key.
        """
        wanted = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        if len(wanted) > MAX_URIS:
            raise MCPError(INVALID_PARAMS, f"subscriptions/listen: {len(wanted)} resourceSubscriptions; "
                           f"toolhost watches at most {MAX_URIS} URIs per stream (open several streams)")
        if len(self._open) >= MAX_STREAMS:
            raise MCPError(INTERNAL_ERROR, f"toolhost: too many open subscriptions/listen streams ({MAX_STREAMS}); "
                           "close one and retry")
        request = RequestView.of(ctx)
        caller = self._caller(request)
        if caller is not None and self._per_caller[caller] >= self.share:
            raise MCPError(INTERNAL_ERROR, f"toolhost: this API key already has {self._per_caller[caller]} open "
                           f"subscriptions/listen streams, its share of the {MAX_STREAMS} the gateway serves; "
                           "close one of them and retry, or give each client its own key (toolhost keys create)",
                           {"share": self.share, "open": self._per_caller[caller]})
        routes = {uri: route for uri in wanted if (route := self.catalog.watchable(request, uri)) is not None}
        watcher = _Watcher()
        handler = ListenHandler(_VisibleBus(self.bus, frozenset(routes)), max_subscriptions=1,
                                max_buffered_events=MAX_BACKLOG)
        self._open.add(handler)
        if caller is not None:
            self._per_caller[caller] += 1
        try:
            await self._each(routes, watcher, self.catalog.watch)
            return await handler(ctx, params)
        finally:
            try:
                with anyio.CancelScope(shield=True):
                    await self._each(routes, watcher, self.catalog.unwatch)
            finally:
                self._open.discard(handler)  # after unwatching: no open stream means no upstream watch left
                if caller is not None:
                    self._per_caller[caller] -= 1
                    if not self._per_caller[caller]:
                        del self._per_caller[caller]

    def _caller(self, request: RequestView) -> str | None:
        """The API key a stream counts against (``None``: no key, only the global bound)."""
        principal = self.catalog.resolve(request)
        return f"{principal.user}:{principal.key_id}" if principal.key_id is not None else None

    @staticmethod
    async def _each(routes: dict[str, tuple[str, str]], watcher: _Watcher, op: Any) -> None:
        async def one(uri: str, server: str, original: str) -> None:
            try:
                await op(uri, server, original, watcher)
            except MCPError as err:  # the URI just never fires; the stream still serves the rest
                log.warning("listen stream: %s of %s failed: %s", op.__name__, uri, err.message)

        async with anyio.create_task_group() as tg:
            for uri, (server, original) in routes.items():
                tg.start_soon(one, uri, server, original)

    def close(self) -> None:
        """End every open stream gracefully (each sends its final result); for shutdown."""
        for handler in list(self._open):
            handler.close()

    async def _catalog_changed(self, _server: str) -> None:
        await self.bus.publish(PromptsListChanged())
        await self.bus.publish(ResourcesListChanged())

    async def _resource_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))

"""Prompts, resources, completion and logging of the registry server (namespaced, under the same grants as tools).

Every upstream's prompts, resources and templates are served under namespaced names/URIs
(:mod:`registry.catalog`), all pages merged, filtered by the same grants as tools: an item is
visible when the caller's policy allows its grant name (see :mod:`registry.catalog`). A hidden
prompt, resource or template answers exactly like an unknown one (same code, same message), so
names and URIs cannot be probed. ``prompts/get``, ``resources/read`` and ``completion/complete``
are audited, refused ones included, and what a read or get returns counts for session taint
(:mod:`servers.gateway.catalog_guard`).

Errors: unknown/hidden prompt or template → ``-32602`` ``Unknown prompt: NAME`` /
``Unknown resource template: URI``; unknown/hidden resource → ``-32002`` ``Resource not found: URI``
(MCP spec 2025-11-25, server features, resources: error handling); an upstream's own error
passes through unchanged; an unreachable upstream → ``-32603`` naming the server.

``resources/subscribe`` is forwarded upstream once per URI and ``notifications/resources/updated``
goes to every client connection that subscribed; prompt/resource ``list_changed`` goes to every
handshake-era client connection seen so far.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp.server.connection import Connection
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CompleteRequestParams,
    CompleteResult,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    Prompt,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

from host.access import AccessControl
from host.errors import UpstreamUnavailable
from host.runtime import HostRuntime
from host.upstream import forward
from host.upstream.input_required import InputExchange, input_exchange
from host.upstream.parked_input import InputParking
from host.upstream.relay import current_downstream, downstream_scope
from registry import Principal
from registry.catalog import CatalogItem, qualify_uri
from servers.gateway.catalog_guard import CatalogGuard
from servers.gateway.downstream import LogLevels, downstream_for
from servers.gateway.held_items import held_error
from servers.gateway.input_flow import exchange_for
from servers.gateway.request_view import RequestView

__all__ = ["RESOURCE_NOT_FOUND", "CatalogHandlers"]

RESOURCE_NOT_FOUND = -32002
"""JSON-RPC code for an unknown resource (MCP spec 2025-11-25, resources: error handling)."""

Resolver = Callable[[RequestView], Principal]


class CatalogHandlers:
    """The ``on_*`` handlers for prompts, resources, completion and logging (see module docstring).

    Args:
        runtime: the running host (its manager holds the catalog and connections).
        resolve: maps a request to its caller.
        access: where audit rows go (``None``: no audit).
    """

    def __init__(self, runtime: HostRuntime, resolve: Resolver, access: AccessControl | None) -> None:
        self.runtime = runtime
        self.manager = runtime.manager
        self.catalog = runtime.manager.catalog
        self.resolve = resolve
        self.access = access
        self.guard = CatalogGuard(runtime, resolve, access)
        self.levels = LogLevels()
        self.parking = InputParking(self.manager.spawn)
        """Upstream calls of handshake-era servers held across 2026-07-28 clients' input rounds."""
        self._subscribers: dict[str, weakref.WeakSet[Any]] = {}
        """Per exposed URI: client connections and listen streams' watchers (async ``notify(method, params)``)."""
        self._conns: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.manager.catalog_listeners.append(self._catalog_changed)
        self.manager.resource_listeners.append(self._resource_updated)

    # -- capability truth ---------------------------------------------------------------
    def offered(self) -> dict[str, bool]:
        """Which optional capabilities some connected upstream offers right now."""
        caps = {"prompts": False, "resources": False, "completions": False, "logging": False}
        for conn in self.manager.connections.values():
            sc = conn.server_capabilities
            if sc is None:
                continue
            caps["prompts"] |= sc.prompts is not None
            caps["resources"] |= sc.resources is not None
            caps["completions"] |= sc.completions is not None
            caps["logging"] |= sc.logging is not None
        return caps

    def handlers(self) -> dict[str, Any]:
        """Constructor keyword arguments for :class:`mcp.server.Server`."""
        return {
            "on_list_prompts": self.list_prompts,
            "on_get_prompt": self.get_prompt,
            "on_list_resources": self.list_resources,
            "on_list_resource_templates": self.list_templates,
            "on_read_resource": self.read_resource,
            "on_subscribe_resource": self.subscribe,
            "on_unsubscribe_resource": self.unsubscribe,
            "on_completion": self.complete,
            "on_set_logging_level": self.set_level,
        }

    # -- helpers ------------------------------------------------------------------------
    def upstream_protocol(self, tool: str | None = None, *, server: str | None = None) -> str | None:
        """The protocol version negotiated with the server of ``tool`` (or ``server``), if connected."""
        if server is None:
            record = self.runtime.registry.snapshot().get(tool) if tool is not None else None
            server = record.server if record is not None else None
        conn = self.manager.connections.get(server) if server is not None else None
        return conn.status.protocol_version if conn is not None else None

    async def _parked(self, request: RequestView, server: str, exchange: InputExchange | None,
                      op: Callable[[], Any]) -> Any:
        """``await op()``, parked across input rounds when a 2026-07-28 client reaches a handshake-era upstream."""
        if self.parking.applies(exchange, self.upstream_protocol(server=server)):
            assert exchange is not None
            return await self.parking.run(exchange, self.resolve(request).user, op)
        return await op()

    def _visible(self, request: RequestView) -> Callable[[CatalogItem], bool]:
        view = self.runtime.policy.for_request(self.resolve(request))
        return lambda item: view.catalog_visible(item.as_record())

    def _remember(self, request: RequestView) -> RequestView:
        """Note a handshake-era request's connection (told of prompt/resource list changes); ``request``."""
        if (conn := request.stateful_connection) is not None:
            self._conns.add(conn)
        return request

    async def _forward(self, request: RequestView, op: Any, exchange: InputExchange | None = None) -> Any:
        try:
            # a parked call (host.upstream.parked_input) already routes upstream requests to itself
            with (downstream_scope(current_downstream() or downstream_for(request, self.levels)),
                  input_exchange(exchange), self.guard.sampling(request)):
                return await op
        except UpstreamUnavailable as err:
            raise MCPError(INTERNAL_ERROR, str(err)) from None

    # -- prompts ------------------------------------------------------------------------
    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        request = RequestView.of(ctx)
        self._remember(request)
        visible = self._visible(request)
        return ListPromptsResult(
            prompts=[Prompt.model_validate(dict(i.wire)) for i in self.catalog.items("prompt") if visible(i)]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: GetPromptRequestParams
    ) -> GetPromptResult | InputRequiredResult:
        request = RequestView.of(ctx)
        item = self.catalog.prompt(params.name)
        if item is None or not self._visible(request)(item):
            missing = "unknown" if item is None else "hidden"
            await self.guard.audit(request, "prompt", params.name, missing, params.arguments)
            raise held_error(self.manager.catalog_holds.prompt(params.name), self._visible(request),
                             MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}"))
        status = "error"
        try:
            conn = self.manager.connection(item.server)
            exchange = exchange_for(request, params)
            result = await self._parked(request, item.server, exchange, lambda: self._forward(
                request, forward.get_prompt(conn, item.original, params.arguments,
                                            timeout_seconds=self.manager.request_timeout(item.server)),
                exchange))
            if result is None and exchange is not None and exchange.pending is not None:
                status = "input_required"
                return exchange.pending
            status = "ok"
            await self.guard.delivered(request, "prompt", item.exposed, item.server, None, params.arguments)
            return result
        finally:
            if status != "ok":
                await self.guard.audit(request, "prompt", item.exposed, status, params.arguments)

    # -- resources ----------------------------------------------------------------------
    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        request = RequestView.of(ctx)
        self._remember(request)
        visible = self._visible(request)
        return ListResourcesResult(
            resources=[Resource.model_validate(dict(i.wire)) for i in self.catalog.items("resource") if visible(i)]
        )

    async def list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        request = RequestView.of(ctx)
        self._remember(request)
        visible = self._visible(request)
        return ListResourceTemplatesResult(
            resource_templates=[
                ResourceTemplate.model_validate(dict(i.wire)) for i in self.catalog.items("template") if visible(i)
            ]
        )

    def _missing(self, uri: str) -> str:
        """Audit status of a URI :meth:`_route` refused: ``hidden`` (exists, not granted) or ``unknown``."""
        route = self.catalog.route_uri(uri)
        return "hidden" if route is not None and route[2] is not None else "unknown"

    def _route(self, request: RequestView, uri: str) -> tuple[str, str]:
        route = self.catalog.route_uri(uri)
        if route is None or route[2] is None or not self._visible(request)(route[2]):
            raise held_error(self.manager.catalog_holds.resource(uri), self._visible(request),
                             MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri}))
        return route[0], route[1]

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult | InputRequiredResult:
        request = RequestView.of(ctx)
        uri = str(params.uri)
        try:
            server, original = self._route(request, uri)
        except MCPError:
            await self.guard.audit(request, "resource", uri, self._missing(uri))
            raise
        status = "error"
        try:
            conn = self.manager.connection(server)
            exchange = exchange_for(request, params)
            result: ReadResourceResult | None = await self._parked(request, server, exchange, lambda: self._forward(
                request, forward.read_resource(conn, original, timeout_seconds=self.manager.request_timeout(server)),
                exchange))
            if result is None and exchange is not None and exchange.pending is not None:
                status = "input_required"
                return exchange.pending
            assert result is not None
            prefix = self.manager.config.servers[server].prefix
            for content in result.contents:
                content.uri = qualify_uri(prefix, str(content.uri))
            status = "ok"
            await self.guard.delivered(request, "resource", uri, server, original)
            return result
        finally:
            if status != "ok":
                await self.guard.audit(request, "resource", uri, status)

    async def subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        request = RequestView.of(ctx)
        uri = str(params.uri)
        server, original = self._route(request, uri)
        with downstream_scope(downstream_for(request, self.levels)):
            await self.watch(uri, server, original, request.connection)
        return EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        request = RequestView.of(ctx)
        uri = str(params.uri)
        server, original = self._route(request, uri)
        with downstream_scope(downstream_for(request, self.levels)):
            await self.unwatch(uri, server, original, request.connection)
        return EmptyResult()

    def watchable(self, request: RequestView, uri: str) -> tuple[str, str] | None:
        """``(server, original URI)`` of an exposed resource URI the caller may see, else ``None``."""
        try:
            return self._route(request, uri)
        except MCPError:
            return None

    async def watch(self, uri: str, server: str, original: str, watcher: Any) -> None:
        """Count ``watcher`` (a client connection, or a listen stream's token with an async
        ``notify(method, params)``) among the subscribers of the exposed ``uri``; the first one
        subscribes upstream (``resources/subscribe`` or the upstream's listen stream).

        Raises:
            MCPError: the upstream's own error, or ``-32603`` naming an unreachable upstream.
        """
        subscribers = self._subscribers.get(uri)
        if not subscribers:
            conn = self.manager.connection(server)
            try:
                await forward.subscribe(conn, original, timeout_seconds=self.manager.request_timeout(server))
            except UpstreamUnavailable as err:
                raise MCPError(INTERNAL_ERROR, str(err)) from None
            subscribers = self._subscribers.setdefault(uri, weakref.WeakSet())
        subscribers.add(watcher)

    async def unwatch(self, uri: str, server: str, original: str, watcher: Any) -> None:
        """Undo :meth:`watch`; the last subscriber's leaving unsubscribes upstream (same errors)."""
        subscribers = self._subscribers.get(uri)
        if subscribers is None:
            return
        subscribers.discard(watcher)
        if not subscribers:
            del self._subscribers[uri]
            conn = self.manager.connection(server)
            try:
                await forward.unsubscribe(conn, original, timeout_seconds=self.manager.request_timeout(server))
            except UpstreamUnavailable as err:
                raise MCPError(INTERNAL_ERROR, str(err)) from None

    # -- completion and logging ----------------------------------------------------------
    async def complete(self, ctx: ServerRequestContext[Any, Any], params: CompleteRequestParams) -> CompleteResult:
        request = RequestView.of(ctx)
        ref = params.ref
        visible = self._visible(request)
        name = ref.name if isinstance(ref, PromptReference) else str(ref.uri)
        context = params.context.arguments if params.context is not None else None
        argument = {"name": params.argument.name, "value": params.argument.value}
        audited = {"argument": argument, "context": context}
        if isinstance(ref, PromptReference):
            item = self.catalog.prompt(ref.name)
            refusal = f"Unknown prompt: {ref.name}"
            held = self.manager.catalog_holds.prompt(ref.name)
            upstream_ref: Any = PromptReference(type="ref/prompt", name=item.original) if item else None
        else:
            item = self.catalog.template(str(ref.uri))
            refusal = f"Unknown resource template: {ref.uri}"
            held = self.manager.catalog_holds.template(str(ref.uri))
            upstream_ref = ResourceTemplateReference(type="ref/resource", uri=item.original) if item else None
        if item is None or not visible(item):
            await self.guard.audit(request, "complete", name, "unknown" if item is None else "hidden", audited)
            raise held_error(held, visible, MCPError(INVALID_PARAMS, refusal))
        conn = self.manager.connection(item.server)
        caps = conn.server_capabilities
        if caps is None or caps.completions is None:
            return CompleteResult(completion={"values": [], "total": 0, "hasMore": False})
        status = "error"
        try:
            result = await self._forward(request, forward.complete(
                conn, upstream_ref, argument, context, timeout_seconds=self.manager.request_timeout(item.server)))
            status = "ok"
            return result
        finally:
            await self.guard.audit(request, "complete", name, status, audited)

    async def set_level(self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        request = RequestView.of(ctx)
        self.levels.set(request, params.level)
        return EmptyResult()

    # -- notifications towards clients ----------------------------------------------------
    async def _catalog_changed(self, _server: str) -> None:
        for conn in list(self._conns):
            await conn.notify("notifications/prompts/list_changed", None)
            await conn.notify("notifications/resources/list_changed", None)

    async def _resource_updated(self, uri: str) -> None:
        for conn in list(self._subscribers.get(uri, ())):
            await conn.notify("notifications/resources/updated", {"uri": uri})

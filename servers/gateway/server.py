"""The registry MCP server: every connected tool behind ``tool_search`` and ``call_tool``.

``tools/list`` shows (filtered by the caller's permissions):

* ``tool_search(query, limit=5)`` — hybrid search (BM25 + multilingual embeddings, learning
  from searches followed by successful calls) over names, descriptions and parameters
  (:mod:`registry.search`; also ``select:a,b`` and ``regex:PATTERN``); returns compact lines
  for the model plus the matching tools' full definitions (qualified name, description,
  input schema, risk, ``needs_approval``, ``available``) as JSON text and as
  ``structuredContent`` ``{"tools": [...], "weak": bool}`` (``weak``: no tool fits well);
* ``call_tool(name, arguments)`` — runs a tool by qualified name through the call pipeline;
* every ``always_load`` tool, directly, and — deferred loading — every tool a search on this
  client connection returned (handshake-era connections; a ``tools/list_changed`` notification
  announces them; 2026-07-28 exchanges are stateless and keep the short list);
* with ``expose="all"``, every visible tool directly instead (small setups).

A tool may also be called directly by its qualified name. Unknown, invisible and denied
names all give the same answer, so names cannot be probed. Upstream ``isError`` results
pass through as errors; upstream progress notifications are forwarded to the caller.

Built on the SDK's low-level :class:`mcp.server.Server` (raw JSON Schemas, results built by
hand so the model always sees why a call failed). No import-time side effects.

Split by job: this module builds the server and routes requests; :mod:`servers.gateway.meta_tools`
defines ``tool_search`` / ``call_tool`` and builds the ``tool_search`` result;
:mod:`servers.gateway.registry_server` is the SDK ``Server`` with truthful capabilities.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Literal

from mcp.server import ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
)

from host.access import AccessControl, approval_elicitation
from host.runtime import HostRuntime
from host.upstream.implementation import toolhost_version
from host.upstream.input_required import input_exchange
from host.upstream.relay import downstream_scope
from registry import ANONYMOUS, Principal
from registry.catalog import qualify_uri
from registry.search import DeferredLoadingState, SearchTrail
from servers.gateway.approval_elicit import elicitor_for
from servers.gateway.caller_scope import ExpiringStates, caller_scope
from servers.gateway.catalog import CatalogHandlers
from servers.gateway.downstream import downstream_for
from servers.gateway.error_boundary import InternalErrorBoundary
from servers.gateway.input_flow import exchange_for, pending_result, request_state_boundary
from servers.gateway.listen_relay import ListenRelay
from servers.gateway.mcp_results import ERROR_META_KEY, to_mcp_result
from servers.gateway.meta_tools import (
    CALL_TOOL,
    CALL_TOOL_TOOL,
    EXECUTE,
    EXECUTE_TOOL,
    TOOL_SEARCH,
    as_mcp_tool,
    gateway_refusal,
    refusal_error,
    run_search,
    search_tool,
    text_error,
)
from servers.gateway.notify import ToolsChangedNotifier
from servers.gateway.otel_gate import spans_when_tracing
from servers.gateway.registry_server import RegistryServer
from servers.gateway.request_view import RequestView
from servers.gateway.script_sessions import script_session
from servers.gateway.search_usage import UsageLearner
from servers.gateway.settle import SettleMiddleware

__all__ = ["CALL_TOOL", "TOOL_SEARCH", "Expose", "PrincipalResolver", "RegistryHandlers", "RegistryServer",
           "create_registry_server"]

TRAIL_TTL_SECONDS = 600.0
"""How long a stateless caller's searches are kept after its last request (seconds)."""

Expose = Literal["search", "all"]
PrincipalResolver = Callable[[RequestView], Principal]
"""Maps a request to the caller (HTTP: from the bearer token; stdio: the ``--user``)."""


async def _announce_list_changed(session: ServerSession | None) -> None:
    """Tell the client its tool list grew (legacy sessions; best effort, never fails the call)."""
    if session is None:
        return
    try:
        await session.send_tool_list_changed()
    except Exception:  # noqa: BLE001 - a client that cannot take notifications still gets the result
        return


class RegistryHandlers:
    """The ``tools/list``, ``tools/call`` and schema-lookup handlers of the registry server, with
    their per-connection state (see module docstring and :func:`create_registry_server`).

    Args:
        runtime: connections, registry, search and policy; audits every call itself when
            ``access`` is given (``HostRuntime(auditor=...)``).
        expose: ``"search"`` or ``"all"``.
        resolve: maps each request to its caller.
        access: audits lists and searches; approvals are asked through MCP elicitation.
        notifier: remembers client connections to tell them when the registry changes.
        catalog: the prompt/resource handlers (log levels and input parking are shared).
        usage_access: the store the usage memory lives in (default: ``access``; in open access the
            permission store is there but does not decide, so ``access`` is ``None``).
    """

    def __init__(
        self,
        runtime: HostRuntime,
        *,
        expose: Expose,
        resolve: PrincipalResolver,
        access: AccessControl | None,
        notifier: ToolsChangedNotifier | None,
        catalog: CatalogHandlers,
        usage_access: AccessControl | None = None,
    ) -> None:
        self.runtime = runtime
        self.expose = expose
        self.resolve = resolve
        self.access = access
        self.notifier = notifier
        self.catalog = catalog
        self.learner = UsageLearner.for_runtime(runtime, usage_access or access)
        self._loaded: weakref.WeakKeyDictionary[Connection, DeferredLoadingState] = weakref.WeakKeyDictionary()
        """Deferred loading per client connection: tools a search returned stay listed for it."""
        self._trails: weakref.WeakKeyDictionary[Connection, SearchTrail] = weakref.WeakKeyDictionary()
        """Searches of each connection, so a successful call of a hit teaches the usage memory."""
        self._caller_trails = ExpiringStates(SearchTrail, ttl_seconds=TRAIL_TTL_SECONDS)
        """Searches of each stateless caller (:func:`servers.gateway.caller_scope.caller_scope`)."""
        self.taint_sessions = catalog.guard.sessions
        """The session-taint session of each connection (stateless exchanges: per caller)."""

    # -- per-connection state -------------------------------------------------------------
    def trail_of(self, request: RequestView, principal: Principal) -> SearchTrail | None:
        """The searches of the request's connection (handshake era) or of its caller (stateless:
        :func:`servers.gateway.caller_scope.caller_scope`, kept :data:`TRAIL_TTL_SECONDS` after its
        last use); ``None`` without a usage memory."""
        if self.learner is None:
            return None
        conn = request.stateful_connection
        if conn is None:
            return self._caller_trails.get(caller_scope(request, principal).key)
        trail = self._trails.get(conn)
        if trail is None:
            trail = self._trails[conn] = SearchTrail()
        return trail

    def state_of(self, request: RequestView) -> DeferredLoadingState:
        """The connection's loaded tools. Handshake-era connections (stdio, stateful HTTP) keep
        state across requests; a 2026-07-28 exchange is stateless, so it gets a fresh, empty state
        (its tools stay reachable through call_tool)."""
        conn = request.stateful_connection
        if conn is None:
            return DeferredLoadingState()
        state = self._loaded.get(conn)
        if state is None:
            state = self._loaded[conn] = DeferredLoadingState()
        return state

    # -- handlers -------------------------------------------------------------------------
    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        """``tools/list``: the meta tools and loaded tools, or (``expose="all"``) every visible tool."""
        request = RequestView.of(ctx)
        if self.notifier is not None:
            self.notifier.remember(request)
        principal = self.resolve(request)
        runtime = self.runtime
        if self.expose == "all":
            tools = [as_mcp_tool(t) for t in runtime.visible_tools(principal)]
        else:
            visible, _key = runtime.visibility(principal)
            declared = self.state_of(request).declared(runtime.registry.snapshot(), visible)
            tools = [search_tool(self.code_mode), CALL_TOOL_TOOL] + [as_mcp_tool(t) for t in declared]
        if self.code_mode and self.expose == "all":
            tools.append(EXECUTE_TOOL)
        elif self.code_mode:
            tools.insert(2, EXECUTE_TOOL)
        if self.access is not None:
            await self.access.audit_async(action="list", principal=principal, status="ok",
                                          detail=f"{len(tools)} tools")
        refusal = gateway_refusal(runtime, principal)  # a closed gateway says why the list holds no tool
        meta = {ERROR_META_KEY: refusal_error(refusal, "tools/list")} if refusal is not None else None
        return ListToolsResult(tools=tools, _meta=meta)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        """``tools/call``: ``tool_search``, ``call_tool`` or a tool by its qualified name."""
        request = RequestView.of(ctx)
        if self.notifier is not None:
            self.notifier.remember(request)
        principal = self.resolve(request)
        args = dict(params.arguments or {})
        if params.name == TOOL_SEARCH:
            result, hits = run_search(self.runtime, principal, args, self.trail_of(request, principal))
            if self.access is not None:
                await self.access.audit_async(action="search", principal=principal, status="ok",
                                              detail=f"{len(hits)} hits for {str(args.get('query'))[:100]!r}")
            if self.expose == "search" and self.state_of(request).mark_loaded(hits):
                await _announce_list_changed(request.session)
            return result
        if params.name == EXECUTE and self.code_mode:
            return to_mcp_result(await self.run_script(request, principal, args.get("code")))
        if params.name == CALL_TOOL:
            target = args.get("name")
            if not isinstance(target, str) or not target:
                return text_error("call_tool needs 'name': the exact tool name from tool_search")
            inner = args.get("arguments", {})
            if inner is None:
                inner = {}
            if not isinstance(inner, (dict, str)):
                return text_error(f"call_tool 'arguments' must be an object, got {type(inner).__name__}")
            # A JSON string is parsed by the pipeline (with a precise error when it is not an object).
            return await self.run_call(request, principal, target, inner, params)
        return await self.run_call(request, principal, params.name, args, params)

    async def run_call(
        self,
        request: RequestView,
        principal: Principal,
        target: str,
        arguments: dict[str, Any] | str,
        params: CallToolRequestParams,
    ) -> CallToolResult | InputRequiredResult:
        """One call of ``target`` through the runtime (which authorizes, limits and audits it), with
        approvals asked by elicitation, upstream progress forwarded and upstream input requests
        handed to 2026-07-28 clients."""
        runtime, catalog, session = self.runtime, self.catalog, request.session

        async def forward_progress(progress: float, total: float | None, message: str | None) -> None:
            if session is None:
                return
            try:
                await session.report_progress(progress, total, message)
            except Exception:  # noqa: BLE001 - a parked call's first request may be over; progress is best effort
                return

        scope = downstream_for(request, catalog.levels)
        exchange = exchange_for(request, params)  # 2026-07-28 clients: upstream input requests come back to them

        async def invoke() -> Any:
            return await runtime.call(target, arguments, principal, progress_callback=forward_progress,
                                      session_id=self.taint_sessions.of(request, principal))

        elicitor = elicitor_for(request) if self.access is not None else None
        with approval_elicitation(elicitor), downstream_scope(scope), input_exchange(exchange):
            if catalog.parking.applies(exchange, catalog.upstream_protocol(target)):
                # a 2026-07-28 client and a handshake-era upstream: the call's parked round
                assert exchange is not None
                result = await catalog.parking.run(exchange, principal.user, invoke)
            else:
                result = await invoke()
        if (pending := pending_result(exchange)) is not None:
            return pending
        result = self.taint_sessions.explained(request, principal, result)
        await self._learn(request, principal, target, result)
        return to_mcp_result(result, uri_for=self._uri_mapper(target))

    @property
    def code_mode(self) -> bool:
        """Whether the ``execute`` meta tool is offered (the runtime has a sandbox pool)."""
        return self.runtime.code_mode is not None

    async def run_script(self, request: RequestView, principal: Principal, code: Any) -> Any:
        """One ``execute`` call: the script runs in the runtime's sandbox pool; every inner call
        goes through the runtime (authorized, limited, audited with the script and step) in the
        caller's taint session, the one its direct ``call_tool`` calls use."""
        elicitor = elicitor_for(request) if self.access is not None else None
        with approval_elicitation(elicitor):
            return await self.runtime.run_script(
                code, principal, pool_session=script_session(request, principal, self.taint_sessions),
                taint_session=self.taint_sessions.of(request, principal))

    def input_schema_of(self, name: str) -> dict[str, Any] | None:
        """The SDK's ``get_tool_input_schema`` hook (2026-07-28 ``Mcp-Param-*`` header checks).

        Without it the SDK runs the whole ``tools/list`` handler (and its audit row) before every
        2026-07-28 ``tools/call`` just to find one schema. A tool the caller may not see answers
        ``None`` (no header check), exactly like a name that does not exist, so names cannot be
        probed; the caller comes from the request's bearer token (the SDK's auth context).
        """
        if name == CALL_TOOL:
            return CALL_TOOL_TOOL.input_schema
        if name == TOOL_SEARCH:
            return search_tool(self.code_mode).input_schema
        if name == EXECUTE and self.code_mode:
            return EXECUTE_TOOL.input_schema
        record = self.runtime.registry.snapshot().get(name)
        if record is None:
            return None
        visible, _key = self.runtime.visibility(self.resolve(RequestView.outside_request()))
        return record.input_schema if visible(record) else None

    # -- helpers --------------------------------------------------------------------------
    def _uri_mapper(self, target: str) -> Callable[[str], str] | None:
        tool = self.runtime.registry.snapshot().get(target)
        server = self.runtime.config.servers.get(tool.server) if tool is not None else None
        if server is None or not server.prefix:
            return None
        return lambda uri, prefix=server.prefix: qualify_uri(prefix, uri)

    async def _learn(self, request: RequestView, principal: Principal, target: str, result: Any) -> None:
        trail = self.trail_of(request, principal)
        if self.learner is not None and trail is not None and result.status.value == "ok":
            await self.learner.learned(trail, target)


def create_registry_server(
    runtime: HostRuntime,
    *,
    expose: Expose = "search",
    principal_for: PrincipalResolver | None = None,
    access: AccessControl | None = None,
    notifier: ToolsChangedNotifier | None = None,
    name: str = "toolhost",
    settle_seconds: float = 0.0,
    usage_access: AccessControl | None = None,
) -> RegistryServer:
    """Build the registry MCP server over a running :class:`HostRuntime`.

    Args:
        runtime: connections, registry, search and policy.
        expose: ``"search"`` (tool_search + call_tool + always_load tools) or ``"all"``.
        principal_for: maps each request to its caller (default: the anonymous local user).
        access: per-user access control: every list and search is audited (every call is audited
            by the runtime, so it must be built with ``HostRuntime(auditor=...)``), and calls that
            need approval ask the user through MCP elicitation when the client supports it.
        notifier: remembers client connections so they can be told when the registry changes
            (subscribe it to ``runtime.registry`` and run it; see :mod:`servers.gateway.notify`); its bus
            feeds the ``subscriptions/listen`` streams of 2026-07-28 clients
            (:mod:`servers.gateway.listen_relay`, reachable as ``server.listen_relay``).
        name: the server name reported to clients.
        settle_seconds: while the runtime's servers still make their first connect attempts (a
            runtime entered with ``connect_in_background``), requests that read the registry wait
            up to this long for them (:mod:`servers.gateway.settle`); ``0``: never wait.
        usage_access: the store of the usage memory when ``access`` is ``None`` (open access:
            searches followed by a call of a hit are still learned).

    Returns:
        A low-level ``Server``; run it with ``stdio_server()`` or ``streamable_http_app()``.

    Raises:
        ValueError: ``access`` is given but ``runtime`` has no auditor (its calls would go unaudited).
    """
    if access is not None and runtime.auditor is None:
        raise ValueError("create_registry_server(access=...) needs a runtime that audits its calls: "
                         "build it with HostRuntime(..., auditor=access)")
    resolve = principal_for or (lambda _ctx: ANONYMOUS)
    catalog = CatalogHandlers(runtime, resolve, access if access is not None else usage_access)
    listen = ListenRelay(catalog, notifier.bus if notifier is not None else None)
    tools = RegistryHandlers(runtime, expose=expose, resolve=resolve, access=access, notifier=notifier,
                             catalog=catalog, usage_access=usage_access)
    server = RegistryServer(
        catalog,
        listen,
        name,
        version=toolhost_version(),
        get_tool_input_schema=tools.input_schema_of,
        instructions=(
            "toolhost: one MCP server in front of many. Use tool_search to find a tool for the task, "
            "then call_tool with its exact name and arguments."
        ),
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
        on_subscriptions_listen=listen,
        # open access: every client sees every server, so their instructions may be merged, attributed
        upstream_statuses=runtime.statuses if access is None else None,
        **catalog.handlers(),
    )
    server.middleware.append(InternalErrorBoundary())  # outermost: no exception text, no code 0 on the wire
    if settle_seconds > 0:
        server.middleware.append(SettleMiddleware(runtime, settle_seconds))
    server.middleware.append(request_state_boundary(name, resolve))
    spans_when_tracing(server)  # the SDK's per-request span only while a tracer provider is installed
    return server

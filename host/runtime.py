"""The assembled host: connections + registry + search + policy + call path, in one object.

The registry server and every CLI command use this, so listing, searching and calling go
through the same code whatever the front end::

    async with HostRuntime(load_config(path, data_dir=d), data_dir=d) as rt:
        rt.visible_tools(principal)                 # tools the caller may see
        rt.search("cancel my order", principal)     # ranked, permission-filtered
        await rt.call("orders__cancel_order", {"order_id": "A1002"}, principal)   # -> ToolResult

Every call runs through the standard pipeline (:class:`host.pipeline.Pipeline`): parse →
validate → look up → authorize → execute → limit → pair, with events in
``<data_dir>/events/`` and spilled outputs in ``<data_dir>/spill/``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable
from pathlib import Path
from types import TracebackType
import secrets
import time
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from host.tracing import mark_result, span
from host.access.call_scope import CallScopedPolicy, call_scope
from host.access.gate import approval_record
from host.access.local_admin import LocalAdminDisclosure
from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolResult
from host.config import HostConfig
from host.upstream.connection import ServerStatus
from host.events import EventLog
from host.upstream.executor import ProgressCallback
from host.upstream.manager import ServerManager
from host.pipeline import ApprovalHook, CallContext, DenialDisclosure, Pipeline
from registry import ANONYMOUS, AllowAll, Principal, RequestPolicy, Risk, ToolRecord, ToolRegistry
from host.search import VectorCache, VectorWorker, load_embedder
from registry.search import SearchIndex, SearchResult

if TYPE_CHECKING:
    from host.limits import RateLimiter

__all__ = ["CallAuditor", "HostRuntime"]


class CallAuditor(Protocol):
    """Writes one audit row per finished call (e.g. :class:`host.access.AccessControl`)."""

    async def audit_call_async(self, principal: Principal, name: str, arguments: Any, **kwargs: Any) -> int: ...


class HostRuntime:
    """Connections, registry, search and the call path for one configuration.

    Args:
        config: parsed configuration.
        data_dir: the data folder.
        policy: decides what each principal may see and call (default: allow all); a
            :class:`registry.policy.RequestPolicy` (:func:`host.access.build_policy` builds the
            gateway's), asked once per request for a consistent view. The runtime wraps it in a
            :class:`host.access.CallScopedPolicy` (one decision per tool per call): ``self.policy``.
        approvals: decides calls the policy marks ``approval`` (see :class:`host.pipeline.ApprovalHook`).
        reconnect: keep reconnecting failed servers (``serve``) or try once (CLI one-shots).
        on_status: called on every server status change (live display).
        conversation_id: event-log file and spill folder for calls that name none (e.g. one
            per ``serve`` run, ``"cli"`` for CLI calls).
        auditor: when given, every :meth:`call` is audited once it ends (also when cancelled),
            with its principal, status, duration, definition hash and approval/approver.
        limiter: per-user / per-tool rate limits (:class:`host.limits.RateLimiter`); a refused call
            is a ``rate_limited`` result with ``retry_after_seconds``.
        dense: hybrid search with the bundled multilingual model (``None``: on unless
            ``$TOOLHOST_DENSE_SEARCH=0``; without the model, BM25 only and one log line). Tool
            vectors are cached in ``<data_dir>/search/`` and computed in a background thread.
        disclosure: which denials are explained instead of answered as ``unknown_tool`` (default:
            :class:`host.access.LocalAdminDisclosure`, the local admin learns a definition is held
            and how to review it). A name of a configured server that has listed no tools answers
            ``upstream_unavailable`` with its reason (the manager is the pipeline's
            :class:`host.upstream.executor.UnlistedTools`).
    """

    def __init__(
        self,
        config: HostConfig,
        *,
        data_dir: Path,
        policy: RequestPolicy | None = None,
        approvals: ApprovalHook | None = None,
        reconnect: bool = False,
        on_status: Callable[[ServerStatus], None] | None = None,
        conversation_id: str = "default",
        auditor: CallAuditor | None = None,
        limiter: RateLimiter | None = None,
        dense: bool | None = None,
        disclosure: DenialDisclosure | None = None,
    ) -> None:
        self.config = config
        self.auditor = auditor
        self.limiter = limiter
        self.conversation_id = conversation_id
        self.data_dir = data_dir
        self.policy = CallScopedPolicy(policy or AllowAll())  # one decision per tool per call (call_scope)
        self.registry = ToolRegistry()
        embedder = load_embedder(dense)
        self.search_index = SearchIndex(embedder=embedder)
        self.search_index.attach(self.registry)  # incremental: one server's tools at a time
        self.vector_worker: VectorWorker | None = None
        if embedder is not None:
            cache = VectorCache(data_dir / "search", embedder.model_id, embedder.dim)
            self.vector_worker = VectorWorker(self.search_index, embedder, cache)
            self.registry.subscribe(lambda _server, _old, _new: self.vector_worker.notify())  # type: ignore[union-attr]
        self.manager = ServerManager(
            config, data_dir=data_dir, registry=self.registry, reconnect=reconnect, on_status=on_status
        )
        self.event_log = EventLog(data_dir / "events")
        self.pipeline = Pipeline(
            self.registry,
            self.manager,
            self.policy,
            spill_dir=data_dir / "spill",
            event_log=self.event_log,
            approvals=approvals,
            unlisted=self.manager,
            disclosure=disclosure if disclosure is not None else LocalAdminDisclosure(),
        )

    async def __aenter__(self) -> HostRuntime:
        if self.vector_worker is not None:
            self.vector_worker.start()
        await self.manager.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self.manager.__aexit__(exc_type, exc, tb)
        finally:
            try:
                if self.vector_worker is not None:
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(self.vector_worker.stop)
            finally:
                self.event_log.close()

    # -- views filtered by policy ------------------------------------------------------
    def is_visible(self, principal: Principal, tool: ToolRecord) -> bool:
        """Whether ``principal`` may see (and so try to call) ``tool``."""
        return self.policy.evaluate(principal, tool).visible

    def visible_tools(self, principal: Principal = ANONYMOUS) -> list[ToolRecord]:
        """Every tool the principal may see, sorted by qualified name."""
        visible, _key = self.visibility(principal)
        return [t for t in self.registry.tools() if visible(t)]

    def statuses(self) -> list[ServerStatus]:
        """Status of every configured server, in config order."""
        return self.manager.statuses()

    def visibility(self, principal: Principal) -> tuple[Callable[[ToolRecord], bool], Hashable | None]:
        """``(predicate, cache_key)`` of what ``principal`` may see in this request.

        Tools of servers that are down (not ``connected``/``degraded``) are not visible here
        (listings, search), but remain callable by name, which answers ``upstream_unavailable``.

        The policy answers from one consistent view (one revision read); the view's key (caller +
        policy revision, or ``None``) lets the search index cache the visibility mask, so grant
        changes apply on the next request.
        """
        view = self.policy.for_request(principal)
        visible, key = view.visible, view.visible_key
        down = self.manager.unavailable_servers()
        if not down:
            return visible, key
        # Tools of a server that is down stay registered (a call by name gets upstream_unavailable
        # with the reason, never unknown_tool) but are left out of listings and search results.
        return (lambda tool: tool.server not in down and visible(tool)), (None if key is None else (key, down))

    def search(
        self,
        query: str,
        principal: Principal = ANONYMOUS,
        *,
        limit: int = 5,
        servers: Collection[str] | None = None,
        max_risk: Risk | None = None,
    ) -> SearchResult:
        """Visible tools for ``query``, best first (BM25; also ``select:a,b`` and ``regex:PATTERN``).

        Hidden tools are filtered before ranking (see :mod:`registry.search.index`). Never raises
        for any query text; an empty query gets a helpful ``message``.
        """
        visible, key = self.visibility(principal)
        return self.search_index.search(
            query, visible=visible, visible_key=key, limit=limit, servers=servers, max_risk=max_risk
        )

    # -- calls ---------------------------------------------------------------------------
    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | str | None,
        principal: Principal = ANONYMOUS,
        *,
        conversation_id: str | None = None,
        call_id: str | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> ToolResult:
        """Run one call by qualified name through the pipeline.

        Args:
            name: qualified tool name.
            arguments: a JSON object, or its raw text (parsed by the pipeline).
            principal: the caller; invisible and denied tools answer like unknown ones.
            conversation_id: names the event-log file and spill folder (default: the runtime's).
            call_id: the caller's id for the call (generated when ``None``).
            progress_callback: receives upstream progress notifications.

        Returns:
            Exactly one :class:`~host.calls.ToolResult`; failures are results, never exceptions
            (only :class:`host.pipeline.PipelineFatal` escapes, for broken invariants).
        """
        ctx = CallContext(principal=principal, conversation_id=conversation_id or self.conversation_id,
                          progress_callback=progress_callback)
        record = self.registry.snapshot().get(name)
        with span("toolhost.call", **{"toolhost.tool": name, "toolhost.server": record.server if record else None,
                                      "toolhost.user": principal.user, "toolhost.call_id": call_id}) as sp:
            with call_scope():  # the authorize stage, the rate limit and the audit row share one decision
                result = await self._audited_call(name, arguments, ctx, principal, call_id)
            mark_result(sp, result.status.value)
            return result

    async def _audited_call(
        self, name: str, arguments: Any, ctx: CallContext, principal: Principal, call_id: str | None
    ) -> ToolResult:
        if self.auditor is None:
            return await self._limited_call(name, arguments, ctx, principal, call_id)
        started = time.perf_counter()
        status = "cancelled"  # stays so when the caller goes away mid-call
        with approval_record() as used:
            try:
                result = await self._limited_call(name, arguments, ctx, principal, call_id)
                status = result.status.value
            finally:
                with anyio.CancelScope(shield=True):
                    tool = self.registry.snapshot().get(name)
                    await self.auditor.audit_call_async(
                        principal,
                        name,
                        arguments,
                        status=status,
                        duration_seconds=time.perf_counter() - started,
                        tool=tool,
                        decision=None if tool is None else self.policy.evaluate(principal, tool),
                        approval_id=used.approval_id,
                        approver=used.approver,
                        detail=result.error.message if status == "rate_limited" and result.error else None,
                    )
        return result

    async def _limited_call(
        self, name: str, arguments: Any, ctx: CallContext, principal: Principal, call_id: str | None
    ) -> ToolResult:
        """The pipeline call, unless a rate limit refuses it first (only for tools the caller may
        see: an invisible tool answers exactly like an unknown one, from the pipeline)."""
        if self.limiter is not None:
            tool = self.registry.snapshot().get(name)
            if tool is not None and self.policy.evaluate(principal, tool).visible:
                verdict = await anyio.to_thread.run_sync(
                    partial(self.limiter.take, principal.user, tool.qualified_name, tool.server)
                )
                if not verdict.allowed:
                    message = (
                        f"rate limit reached ({verdict.limit}); retry {name} in "
                        f"{verdict.retry_after_seconds:g} s"
                    )
                    return ToolResult(
                        call_id=call_id or f"call_{secrets.token_hex(6)}",
                        name=name,
                        status=ResultStatus.RATE_LIMITED,
                        content=[TextBlock(text=message)],
                        error=ErrorInfo(code=ResultStatus.RATE_LIMITED.value, message=message, where="limit",
                                        retry_after_seconds=verdict.retry_after_seconds,
                                        details={"limit": verdict.limit}),
                    )
        return await self.pipeline.call(name, arguments, ctx, call_id=call_id)

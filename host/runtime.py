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

import secrets
import time
from collections.abc import Callable, Collection, Hashable, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from host.access.audit_gate import AuditSendGate, outcome_unknown, send_record
from host.access.call_scope import CallScopedPolicy, call_scope
from host.access.gate import approval_record
from host.access.local_admin import LocalAdminDisclosure
from host.access.open_access import ClosedGatewayDisclosure
from host.calls import ErrorInfo, ResultStatus, TextBlock, ToolCall, ToolResult
from host.code_mode.approval import ScriptApprovals
from host.code_mode.config import CodeModeConfig
from host.code_mode.cover import CoveringApprovals, current_cover
from host.code_mode.runner import CodeMode
from host.code_mode.script_run import AuditedStep
from host.config import HostConfig
from host.events import EventLog
from host.observers import CallObserver, CallTimer, TimedExecutor
from host.pipeline import ApprovalHook, CallContext, DenialDisclosure, Pipeline, TaintListener, TaintStage
from host.search import VectorWorker, load_embedder, open_cache
from host.store import AuditUnavailable
from host.tracing import mark_result, span
from host.upstream.connection import ServerStatus
from host.upstream.executor import ProgressCallback
from host.upstream.manager import DefinitionPrescorer, ServerManager
from registry import ANONYMOUS, Effect, PatternPolicy, Principal, RequestPolicy, Risk, ToolRecord, ToolRegistry
from registry.safety import FlowGuard, TaintCheck
from registry.search import SearchIndex, SearchResult

if TYPE_CHECKING:
    from host.limits import RateLimiter

__all__ = ["DEFAULT_POLICY", "CallAuditor", "HostRuntime"]

DEFAULT_POLICY = PatternPolicy(approval_risk=Risk.DESTRUCTIVE)
"""The policy of a :class:`HostRuntime` given none: every tool allowed, destructive ones only after
approval (the MCP default for a tool without annotations is destructive)."""


class CallAuditor(Protocol):
    """Writes one audit row per finished call and proves the audit log writable before a call is
    sent (e.g. :class:`host.access.AccessControl`; see :mod:`host.access.audit_gate`)."""

    async def audit_call_async(
        self, principal: Principal, name: str, arguments: Any, *, timeout: float | None = None, **kwargs: Any
    ) -> int | None: ...

    async def ensure_auditable(self) -> None: ...


class HostRuntime:
    """Connections, registry, search and the call path for one configuration.

    Args:
        config: parsed configuration.
        data_dir: the data folder.
        policy: decides what each principal may see and call; a
            :class:`registry.policy.RequestPolicy` (:func:`host.access.build_policy` builds the
            gateway's; :func:`host.agent.governed.governed_runtime` wires it, the approvals and the
            auditor as ``toolhost serve`` does), asked once per request for a consistent view.
            Default (:data:`DEFAULT_POLICY`): every tool, but a ``destructive`` one answers
            ``approval_required`` (and without ``approvals`` nobody can approve it), so a runtime
            built without a policy never runs a destructive tool unasked; pass
            :class:`registry.AllowAll` to trust every call. The runtime wraps it in a
            :class:`host.access.CallScopedPolicy` (one decision per tool per call): ``self.policy``.
        approvals: decides calls the policy marks ``approval`` (see :class:`host.pipeline.ApprovalHook`).
        reconnect: keep reconnecting failed servers (``serve``) or try once (CLI one-shots).
        connect_in_background: entering returns at once while the servers connect (a gateway that
            answers during start-up; see :meth:`settled`); otherwise after every first attempt.
        on_status: called on every server status change (live display).
        conversation_id: event-log file and spill folder for calls that name none (e.g. one
            per ``serve`` run, ``"cli"`` for CLI calls).
        auditor: when given, every :meth:`call` is audited once it ends (also when cancelled),
            with its principal, status, duration, definition hash and approval/approver; and no
            audit row, no action (:mod:`host.access.audit_gate`: write and destructive calls are
            sent only while the audit log is writable; ``toolhost.audit_read_calls`` rules reads).
        limiter: per-user / per-tool rate limits (:class:`host.limits.RateLimiter`); a refused call
            is a ``rate_limited`` result with ``retry_after_seconds``.
        dense: hybrid search with the bundled multilingual model (``None``: on unless
            ``$TOOLHOST_DENSE_SEARCH=0``; without the model, BM25 only and one log line). Tool
            vectors are cached in ``<data_dir>/search/`` and computed in a background thread.
        code_mode: code mode's pool and limits; when ``enabled``, one sandbox pool
            (:attr:`code_mode`, a :class:`host.code_mode.runner.CodeMode`) is opened and closed with
            the runtime, :meth:`run_script` runs scripts, and ``approvals`` is wrapped so an approved
            script's inner calls are covered (:class:`host.code_mode.cover.CoveringApprovals`).
        script_approvals: decides scripts whose manifest needs approval (``None``: such scripts
            answer ``approval_required``).
        flow_guard: data-flow labels and session taint (:class:`registry.safety.TaintCheck`);
            default :meth:`flow_guard_for` of ``config`` (each server's ``toolhost.flow``, the
            ``toolhost.taint`` rule). Checked after the policy allowed a call
            (:mod:`host.pipeline.taint`): ``self.taint``.
        taint_listeners: told of every call the taint rule decided (audit row, console event);
            more with ``self.taint.subscribe``.
        disclosure: which denials are explained instead of answered as ``unknown_tool`` (default:
            :class:`host.access.LocalAdminDisclosure`, the local admin learns a definition is held
            and how to review it). A name of a configured server that has listed no tools answers
            ``upstream_unavailable`` with its reason (the manager is the pipeline's
            :class:`host.upstream.executor.UnlistedTools`).
        prescorer: the learned definition scan run off the event loop before a listing reaches the
            registry (:class:`host.upstream.DefinitionPrescorer`; e.g. ``access.pins.safety``).
    """

    def __init__(
        self,
        config: HostConfig,
        *,
        data_dir: Path,
        policy: RequestPolicy | None = None,
        approvals: ApprovalHook | None = None,
        reconnect: bool = False,
        connect_in_background: bool = False,
        on_status: Callable[[ServerStatus], None] | None = None,
        conversation_id: str = "default",
        auditor: CallAuditor | None = None,
        limiter: RateLimiter | None = None,
        dense: bool | None = None,
        code_mode: CodeModeConfig | None = None,
        script_approvals: ScriptApprovals | None = None,
        flow_guard: TaintCheck | None = None,
        taint_listeners: Sequence[TaintListener] = (),
        disclosure: DenialDisclosure | None = None,
        prescorer: DefinitionPrescorer | None = None,
    ) -> None:
        self.config = config
        self.code_mode: CodeMode | None = CodeMode(code_mode) if code_mode is not None and code_mode.enabled else None
        self.script_approvals = script_approvals
        if self.code_mode is not None and approvals is not None:
            approvals = CoveringApprovals(approvals)
        self.auditor = auditor
        self.limiter = limiter
        self.conversation_id = conversation_id
        self.data_dir = data_dir
        self.policy = CallScopedPolicy(policy or DEFAULT_POLICY)  # one decision per tool per call (call_scope)
        self.registry = ToolRegistry()
        embedder = load_embedder(dense)
        self.search_index = SearchIndex(embedder=embedder)
        self.search_index.attach(self.registry)  # incremental: one server's tools at a time
        self.vector_worker: VectorWorker | None = None
        if embedder is not None:
            cache = open_cache(data_dir / "search", embedder)
            self.vector_worker = VectorWorker(self.search_index, embedder, cache)
            self.registry.subscribe(lambda _server, _old, _new: self.vector_worker.notify())  # type: ignore[union-attr]
        self.manager = ServerManager(
            config, data_dir=data_dir, registry=self.registry, reconnect=reconnect, on_status=on_status,
            connect_in_background=connect_in_background, prescorer=prescorer,
        )
        self.event_log = EventLog(data_dir / "events")
        self._own_guard = None if flow_guard is not None else self.flow_guard_for(config)
        self.taint = TaintStage(flow_guard or self._own_guard, taint_listeners)  # type: ignore[arg-type]
        self.observers: list[CallObserver] = []
        """Told how long each call, search and upstream request took (:meth:`observe`)."""
        self.pipeline = Pipeline(
            self.registry,
            TimedExecutor(self.manager, self.observers),
            self.policy,
            spill_dir=data_dir / "spill",
            event_log=self.event_log,
            approvals=approvals,
            send_gate=None if auditor is None else AuditSendGate(auditor, config.defaults.audit_read_calls),
            taint=self.taint,
            unlisted=self.manager,
            disclosure=disclosure if disclosure is not None else ClosedGatewayDisclosure(LocalAdminDisclosure()),
        )

    @staticmethod
    def flow_guard_for(config: HostConfig) -> FlowGuard:
        """The :class:`registry.safety.FlowGuard` of ``config``: every server's ``toolhost.flow``
        overrides and the top-level ``toolhost.taint`` rule (default ``approve``)."""
        return FlowGuard({name: server.toolhost.flow for name, server in config.servers.items()},
                         rule=config.defaults.taint)

    def use_config(self, config: HostConfig) -> None:
        """Apply a reloaded config's ``toolhost.flow`` blocks and ``toolhost.taint`` rule (to the
        guard built from the config; a ``flow_guard`` given to the constructor is left alone)."""
        self.config = config
        if self._own_guard is not None:
            self._own_guard.reconfigure({n: s.toolhost.flow for n, s in config.servers.items()}, config.defaults.taint)

    def observe(self, observer: CallObserver) -> None:
        """Tell ``observer`` of every later call, search and upstream request (:mod:`host.observers`)."""
        self.observers.append(observer)

    def auto_accepts(self, server: str) -> bool:
        """Whether ``server``'s ``toolhost.auto_accept`` is ``"cosmetic"`` (current config)."""
        found = self.config.servers.get(server)
        return found is not None and found.toolhost.auto_accept == "cosmetic"

    def end_session(self, session_id: str) -> None:
        """Forget the taint of ``session_id`` (its connection closed)."""
        self.taint.end_session(session_id)

    def end_sessions(self, prefix: str) -> list[str]:
        """Forget the taint of every session whose id starts with ``prefix``; their ids."""
        return self.taint.end_sessions(prefix)

    async def __aenter__(self) -> HostRuntime:
        if self.code_mode is not None:
            await self.code_mode.__aenter__()
        try:
            if self.vector_worker is not None:
                self.vector_worker.start()
            await self.manager.__aenter__()
        except BaseException:
            if self.code_mode is not None:
                await self.code_mode.__aexit__(None, None, None)
            raise
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
                try:
                    self.event_log.close()
                finally:
                    if self.code_mode is not None:
                        await self.code_mode.__aexit__(exc_type, exc, tb)

    async def settled(self, timeout_seconds: float) -> bool:
        """Wait at most ``timeout_seconds`` for every server's first connect attempt to end and for
        the tools it listed to be scanned into the registry (:meth:`ServerManager.listings_settled`;
        at once when they were); ``True`` when they were."""
        if self.manager.listings_are_settled:
            return True
        with anyio.move_on_after(timeout_seconds):
            await self.manager.listings_settled()
        return self.manager.listings_are_settled

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
        with CallTimer() as timer:
            visible, key = self.visibility(principal)
            result = self.search_index.search(
                query, visible=visible, visible_key=key, limit=limit, servers=servers, max_risk=max_risk)
        for observer in self.observers:
            observer.search_finished(timer.seconds, len(result.hits))
        return result

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
        script_step: AuditedStep | None = None,
        session_id: str | None = None,
    ) -> ToolResult:
        """Run one call by qualified name through the pipeline.

        Args:
            name: qualified tool name.
            arguments: a JSON object, or its raw text (parsed by the pipeline).
            principal: the caller; invisible and denied tools answer like unknown ones.
            conversation_id: names the event-log file and spill folder (default: the runtime's).
            call_id: the caller's id for the call (generated when ``None``).
            progress_callback: receives upstream progress notifications.
            script_step: set for a code-mode script's inner call (its audit row's ``detail`` names
                the script id, sha256, parent call id and step; the approval that covered it), or
                for a call a provider's program made (:class:`host.agent.programmatic.ProgramStep`).
            session_id: the caller's session for session taint (default: the conversation id).

        Returns:
            Exactly one :class:`~host.calls.ToolResult`; failures are results, never exceptions
            (only :class:`host.pipeline.PipelineFatal` escapes, for broken invariants).
        """
        ctx = CallContext(principal=principal, conversation_id=conversation_id or self.conversation_id,
                          progress_callback=progress_callback, session_id=session_id)
        record = self.registry.snapshot().get(name)
        with span("toolhost.call", **{"toolhost.tool": name, "toolhost.server": record.server if record else None,
                                      "toolhost.user": principal.user, "toolhost.call_id": call_id}) as sp:
            with CallTimer() as timer, call_scope():  # authorize, rate limit and audit row: one decision
                result = await self._audited_call(name, arguments, ctx, principal, call_id, script_step)
            mark_result(sp, result.status.value)
        for observer in self.observers:
            observer.call_finished(name, record, result, timer.seconds, timer.upstream_seconds)
        return result

    async def run_batch(self, calls: Sequence[ToolCall], ctx: CallContext) -> list[ToolResult]:
        """A model's batch of calls through :meth:`call`'s path, so each is rate-limited, run by the
        pipeline and audited (one row per call) as ``ctx.principal``; exactly ``len(calls)`` results,
        in call order (``results[i].call_id == calls[i].call_id``).

        The calls run one after another (a batch of the same model turn still gets one result per
        call; a failed call never stops the next). This is the ``pipeline`` an agent loop gets
        (:func:`host.agent.loop.run_conversation`, :class:`host.agent.providers.WithToolSearch`);
        :meth:`host.pipeline.Pipeline.run_batch` itself audits nothing.
        """
        out: list[ToolResult] = []
        for call in calls:
            with call_scope():
                out.append(await self._audited_call(call.name, call.raw_arguments, ctx, ctx.principal, call.call_id))
        return out

    async def _audited_call(
        self, name: str, arguments: Any, ctx: CallContext, principal: Principal, call_id: str | None,
        script_step: AuditedStep | None = None,
    ) -> ToolResult:
        if self.auditor is None:
            return await self._limited_call(name, arguments, ctx, principal, call_id)
        started = time.perf_counter()
        status = "cancelled"  # stays so when the caller goes away mid-call
        result: ToolResult | None = None
        unwritten: AuditUnavailable | None = None
        with approval_record() as used, send_record() as sent:
            try:
                result = await self._limited_call(name, arguments, ctx, principal, call_id)
                status = result.status.value
            finally:
                with anyio.CancelScope(shield=True):
                    tool = self.registry.snapshot().get(name)
                    decision = None if tool is None else self.policy.evaluate(principal, tool)
                    detail = result.error.message if status == "rate_limited" and result and result.error else None
                    approval_id, approver = used.approval_id, used.approver
                    if script_step is not None:
                        detail = script_step.audit_detail() + (f"; {detail}" if detail else "")
                        cover = current_cover()
                        held = result is not None and result.error is not None and result.error.where == "authorize"
                        if approval_id is None and not held and cover is not None and tool is not None and cover.covers(
                            principal, tool
                        ) and decision is not None and decision.effect is Effect.APPROVAL:
                            approval_id, approver = cover.approval_id, cover.approver
                    try:
                        await self.auditor.audit_call_async(
                            principal,
                            name,
                            arguments,
                            timeout=self.config.defaults.audit_wait_seconds,
                            status=status,
                            duration_seconds=time.perf_counter() - started,
                            tool=tool,
                            decision=decision,
                            approval_id=approval_id,
                            approver=approver,
                            detail=detail,
                        )
                    except AuditUnavailable as e:  # the row stays queued; the answer says what happened
                        unwritten = e
        assert result is not None
        if unwritten is not None and sent.sent and sent.row_required:
            return outcome_unknown(result, None if tool is None else tool.server, unwritten)
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

    # -- code mode -------------------------------------------------------------------------
    async def run_script(
        self, code: Any, principal: Principal = ANONYMOUS, *, call_id: str | None = None,
        pool_session: str | None = None,
        taint_session: str | None = None,
    ) -> ToolResult:
        """Run a code-mode script (the ``execute`` meta tool) for ``principal`` in client session
        ``pool_session`` (an anonymous caller's pool share): see :mod:`host.code_mode.runner`. With
        code mode off, an ``unknown_tool`` result.

        ``taint_session``: the caller's session for session taint, the same one its
        direct :meth:`call` calls pass as ``session_id`` (default: the conversation id)."""
        if self.code_mode is None:
            message = "code mode is off on this gateway (toolhost.code_mode.enabled, `toolhost serve --code-mode`)"
            return ToolResult(call_id=call_id or "execute", name="execute", status=ResultStatus.UNKNOWN_TOOL,
                              content=[TextBlock(text=f"unknown_tool: {message}")],
                              error=ErrorInfo(code="unknown_tool", message=message, where="lookup"))
        return await self.code_mode.run(self, principal, code, call_id=call_id, approvals=self.script_approvals,
                                        pool_session=pool_session, taint_session=taint_session)

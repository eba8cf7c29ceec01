"""One MCP server connection, owned by one task from connect to cleanup.

:meth:`ServerConnection.run` is started with ``task_group.start()``: it opens the transport
(stdio child, streamable HTTP or SSE) behind a :class:`~host.upstream.guard.TransportGuard`,
performs the handshake (the SDK's ``auto`` mode speaks both protocol generations), lists every
page of ``tools/list`` tool by tool (:mod:`host.upstream.listing`) and reports readiness — all
under the connect timeout. It then keeps the session open until it drops, and reconnects with
:class:`~host.upstream.backoff.Backoff`. The same task enters and exits the SDK
client, as AnyIO cancel scopes require.

Liveness: a stdio child's exit closes its stdout; the guard reports that end of stream at once,
so the server is down (``backing_off``) before any call notices, and calls get
``upstream_unavailable`` with the reason immediately. HTTP and SSE sessions are checked with
MCP ``ping`` every ``ping_interval_seconds`` (``server/discover`` on 2026-07-28 sessions, which
removed ``ping``; one failed probe: ``degraded``; two in a row: the
session is dropped and re-established). An SSE stream that idles past its read timeout
reconnects quietly and at once (one line in the server's log, no console traceback).

Opening the transport (stdio child with a safe environment, streamable HTTP, SSE) is
:mod:`host.upstream.transport`; the 2026-07-28 listen stream is :mod:`host.upstream.listen`.

Session recovery (streamable HTTP, a server that forgot its session): a 404 on a request carrying ``Mcp-Session-Id``
means
the server forgot the session: the connection re-initializes at once (no backoff), re-lists, and
the call that got the 404 is retried once (it provably was not processed). No other failure is
retried.

Protocol era fallback: the SDK's ``auto`` mode negotiates 2026-07-28 with SDK 2.x servers, where a
server cannot send its own requests mid-call; one written in the common handshake-era style
(``ctx.elicit()``, sampling, roots) then answers ``-32600 Cannot send 'elicitation/create': this
transport context has no back-channel``. Under ``protocol: auto`` that refusal switches the
connection to the 2025-11-25 handshake for the rest of the run (reconnected at once, one line in the
server's log, a warning in its status) and the call is sent again once on the new session, within
its time budget. The server's handler stopped at its first ask, so what ran twice is the part of
the tool before the question (for the common ask-then-act tool, nothing); set ``protocol:
"legacy"`` to start with the handshake. A 2026-07-28 downstream client (whose questions travel as
input-required rounds set up before the call) gets that first call back as an error asking it to
call again; its later calls are asked normally. Source: MCP 2026-07-28 basic/utilities/mrtr (server
requests are input-required results, no back-channel) and the SDK's ``NoBackChannelError``.

Storm control: ``notifications/tools/list_changed`` goes through a
:class:`~host.upstream.relist.RelistGate` (one re-list in flight, a minimum interval, a trailing
re-list); an identical listing changes nothing downstream.

A stdio child's stderr goes to ``<data_dir>/logs/<server>.stderr.log`` (toolhost's own notes
about that server — skipped garbage, session expiry — go there too, prefixed ``toolhost:``);
its last lines are quoted in connect errors, and a certificate or proxy error among them adds the
variable to set to the reason (:func:`host.upstream.child_env.stderr_hint`).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus
from mcp import Client
from mcp.types import INVALID_REQUEST, CallToolResult, ServerCapabilities, Tool

from host.config import LifecyclePolicy, ServerConfig, StdioServerConfig
from host.errors import CallTimeout, UpstreamError, UpstreamUnavailable
from host.paths import logs_dir, safe_file_name
from host.upstream.backoff import Backoff
from host.upstream.catalog import UpstreamCatalog
from host.upstream.child_env import stderr_hint
from host.upstream.diagnose import diagnose
from host.upstream.executor import ProgressCallback
from host.upstream.forward_call import SessionExpired, call_client_tool, describe_exception
from host.upstream.guard import TransportGuard, guarded, quiet_sdk_logs
from host.upstream.implementation import client_info
from host.upstream.input_required import current_exchange
from host.upstream.listen import UpstreamListener
from host.upstream.listing import MAX_LIST_PAGES, list_all_tools
from host.upstream.relay import Relay
from host.upstream.relist import RelistGate
from host.upstream.serverlog import LogLimits, ServerLog
from host.upstream.session_events import SessionEvents
from host.upstream.status import AVAILABLE_STATES, ConnectionState, ServerStatus
from host.upstream.transport import SAFE_ENV_VARS, Preflight, child_env, open_transport
from registry.redaction import redact

_child_env = child_env  # the older private name (tests)

__all__ = [
    "MAX_LIST_PAGES",
    "SAFE_ENV_VARS",
    "ConnectionState",
    "ServerConnection",
    "ServerStatus",
    "call_client_tool",
    "list_all_tools",
]

_STDERR_TAIL_LINES = 20

ToolsCallback = Callable[[str, list[Tool], list[str]], None]
"""``on_tools(server, tools, warnings)``: called after each complete listing."""


class ServerConnection(SessionEvents):
    """The live connection to one configured server (see module docstring).

    Args:
        config: the server entry.
        connect_timeout_seconds: budget for start + handshake + full listing.
        data_dir: toolhost's data folder (stderr logs go to ``logs/``).
        on_tools: called with every complete listing.
        reconnect: reconnect with backoff after a failure or drop (``serve``), or give up
            after the first attempt (one-shot CLI commands).
        on_status: called with :attr:`status` after every state change and relisting.
        lifecycle: ping interval, backoff and storm-control settings (defaults when ``None``).
    """

    def __init__(
        self,
        config: ServerConfig,
        *,
        connect_timeout_seconds: float,
        data_dir: Path,
        on_tools: ToolsCallback,
        reconnect: bool = True,
        on_status: Callable[[ServerStatus], None] | None = None,
        lifecycle: LifecyclePolicy | None = None,
        on_catalog: Callable[[str, UpstreamCatalog], Awaitable[None]] | None = None,
        on_resource_updated: Callable[[str, str], Awaitable[None]] | None = None,
        log_limits: LogLimits | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.connect_timeout_seconds = connect_timeout_seconds
        self.data_dir = data_dir
        self.on_tools = on_tools
        self.reconnect = reconnect
        self.on_status = on_status
        self.lifecycle = lifecycle or LifecyclePolicy()
        self.status = ServerStatus(name=config.name, transport=config.transport)
        self.backoff = Backoff(
            base_seconds=self.lifecycle.backoff_initial_seconds,
            max_seconds=self.lifecycle.backoff_max_seconds,
            reset_after_seconds=self.lifecycle.healthy_after_seconds,
        )
        self._client: Client | None = None
        self._guard: TransportGuard | None = None
        self._stop = anyio.Event()
        self._lost = anyio.Event()
        self._up = anyio.Event()
        self._connect_scope: anyio.CancelScope | None = None
        self._retry_now = False
        self._attempt = 0
        self._relist = RelistGate(self.lifecycle.relist_min_interval_seconds)
        self.log = ServerLog(logs_dir(data_dir) / f"{safe_file_name(config.name)}.stderr.log", log_limits)
        self.on_catalog = on_catalog
        """``await on_catalog(server, catalog)`` after each listing of prompts/resources/templates."""
        self.on_resource_updated = on_resource_updated
        """``await on_resource_updated(server, original_uri)`` on ``notifications/resources/updated``."""
        self.relay = Relay(config.name, logs_dir(data_dir) / f"{safe_file_name(config.name)}.log", log_limits)
        self.relay.allow_sampling = config.toolhost.sampling
        self._catalog_due = anyio.Event()
        self.handshake_fallback: str | None = None
        """Why this ``protocol: auto`` server is now reached with the handshake (legacy) era, once it
        refused a server-to-client request on a 2026-07-28 session (``None``: not switched)."""
        self.listener = UpstreamListener(config.name, self._on_listen_event, on_open=self._relist.request)
        """The 2026-07-28 listen stream (list changes; resource subscriptions of toolhost's clients)."""
        quiet_sdk_logs()

    # -- lifecycle ---------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the owner task to close the session and return (idempotent).

        A connect attempt in progress (spawn, handshake, listing) is abandoned at once rather
        than waited out, so Ctrl+C never waits for a hung server's connect timeout.
        """
        self._stop.set()
        self._lost.set()
        if self._connect_scope is not None:
            self._connect_scope.cancel()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the connection until :meth:`stop`; reports started after the first attempt ends."""
        started = False

        def report() -> None:
            nonlocal started
            if not started:
                started = True
                task_status.started()

        while not self._stop.is_set():
            uptime, fatal = await self._session_once(report)
            report()
            if self._stop.is_set() or fatal or (not self.reconnect and not self._retry_now):
                break
            if self._retry_now:  # session expired / idle SSE: re-establish at once
                self._retry_now = False
                continue
            delay = self.backoff.next_delay(uptime)
            self.status.next_attempt_at = time.time() + delay
            self._set_state(ConnectionState.BACKING_OFF, f"next attempt in {delay:.1f} s")
            with anyio.move_on_after(delay):
                await self._stop.wait()
            self.status.next_attempt_at = None
        if self._stop.is_set():
            self._set_state(ConnectionState.STOPPED)
        report()

    def _timeout_for_attempt(self) -> float:
        first = self.lifecycle.first_connect_timeout_seconds
        if self._attempt == 1 and first is not None:
            return max(first, self.connect_timeout_seconds)
        return self.connect_timeout_seconds

    async def _session_once(self, report_started: Callable[[], Any]) -> tuple[float | None, bool]:
        """One connect → serve → close cycle. Returns ``(uptime seconds or None, fatal)``."""
        self._attempt += 1
        self.status.attempts = self.backoff.failures + 1
        self.status.error = None
        self._set_state(ConnectionState.CONNECTING)
        self._lost = anyio.Event()
        t0 = time.perf_counter()
        connected_at: float | None = None
        stage = "start"
        fatal = False
        budget = self._timeout_for_attempt()
        guard = TransportGuard(self.name, log=self.log.write, on_closed=self._transport_closed)
        try:
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + budget
                self._connect_scope = scope
                if self._stop.is_set():
                    scope.cancel()
                async with AsyncExitStack() as stack:
                    client = await self._open(stack, guard)
                    stage = "handshake"
                    await stack.enter_async_context(client)
                    stage = "list_tools"
                    held: dict[str, str] = {}
                    tools, warnings = await list_all_tools(client, self.name, held=held)
                    scope.deadline = math.inf
                    self._connect_scope = None
                    self._client, self._guard = client, guard
                    connected_at = time.perf_counter()
                    self._record_connected(client, tools, warnings, held, connected_at - t0)
                    await self._list_catalog(client)
                    self._up.set()
                    report_started()
                    await self._serve(client)
            if scope.cancelled_caught and connected_at is None:
                if self._stop.is_set():
                    self._fail(stage, "stopped while connecting")
                else:
                    self._fail(stage, f"no answer within the connect timeout of {budget:g} s (raise "
                               f"mcpServers.{self.name}.toolhost.connect_timeout_seconds for a slow server)"
                               + self._stdout_text(guard))
        except Preflight as problem:
            fatal = True
            self._fail("start", problem.reason, fatal=True)
        except Exception as err:  # noqa: BLE001 - one server's failure must not reach the others
            if connected_at is None:
                found = diagnose(self.config, err, http_auth=guard.http_auth_failure)
                fatal = found.fatal
                self._fail(stage, found.reason + self._stdout_text(guard), fatal=fatal)
            else:
                self._fail("connection", describe_exception(err))
        finally:
            self._client = None
            self._guard = None
            if self._up.is_set():
                self._up = anyio.Event()
            self._connect_scope = None
            self.log.close()
        if connected_at is not None and not self._stop.is_set() and self.status.state in AVAILABLE_STATES:
            self._fail("connection", "the server closed the connection")
        if guard.idle_timeout and connected_at is not None:
            self._retry_now = True
        if connected_at is None:
            report_started()
            return None, fatal
        return time.perf_counter() - connected_at, fatal

    def _stdout_text(self, guard: TransportGuard) -> str:
        """For a stdio server that failed to connect: the first non-MCP line it wrote to stdout, quoted."""
        if not isinstance(self.config, StdioServerConfig) or guard.first_garbage is None:
            return ""
        return (f"; it wrote text that is not MCP to stdout: {redact(guard.first_garbage)!r} "
                "(a stdio server may write only JSON-RPC messages to stdout; its logs belong on stderr: "
                "check its flags for a stdio or quiet mode)")

    async def _serve(self, client: Client) -> None:
        """Stay connected until stop or a drop: re-list on list_changed, ping remote servers."""
        async with anyio.create_task_group() as tg:
            if client.protocol_version >= "2026":
                tg.start_soon(self.listener.run, client)
            tg.start_soon(self._relist_loop, client)
            tg.start_soon(self._catalog_loop, client)
            if not isinstance(self.config, StdioServerConfig) and self.lifecycle.ping_interval_seconds > 0:
                tg.start_soon(self._ping_loop, client)
            await self._lost.wait()
            tg.cancel_scope.cancel()

    async def _open(self, stack: AsyncExitStack, guard: TransportGuard) -> Client:
        transport = await open_transport(self.config, stack, guard, self.log, self.data_dir)
        cfg = self.config
        return Client(
            guarded(transport, guard),
            message_handler=self._on_message,
            cache=None,
            mode="legacy" if self.handshake_fallback else cfg.toolhost.protocol,
            client_info=client_info(),
            logging_callback=self.relay.on_log,
            log_level="debug",
            elicitation_callback=self.relay.on_elicit,
            sampling_callback=self.relay.on_sample,
            list_roots_callback=self.relay.on_roots,
        )

    # -- status ------------------------------------------------------------------------
    def _record_connected(
        self, client: Client, tools: list[Tool], warnings: list[str], held: dict[str, str], seconds: float
    ) -> None:
        info = client.server_info
        self.status.protocol_version = client.protocol_version
        self.status.server_info = " ".join(p for p in (info.name, info.version) if p) or None if info else None
        self.status.instructions = client.instructions or None
        self.status.connect_seconds = seconds
        self.status.stderr_tail = ""
        self.status.connected_at = time.time()
        self.status.held = held
        self.status.state = ConnectionState.CONNECTED
        self.status.record_event("connected")
        if self.handshake_fallback:
            warnings = [*warnings, self.handshake_fallback]
        self._record_tools(tools, warnings)

    def _record_tools(self, tools: list[Tool], warnings: list[str]) -> None:
        self.status.warnings = list(warnings)
        self.on_tools(self.name, tools, self.status.warnings)
        self.status.tool_count = sum(1 for t in tools if self.config.toolhost.includes(t.name))
        self._changed()

    def _fail(self, stage: str, reason: str, *, fatal: bool = False) -> None:
        self.status.error = f"{stage}: {reason}"
        self.status.stderr_tail = self.stderr_tail()
        if isinstance(self.config, StdioServerConfig) and self.status.stderr_tail and not self._stop.is_set():
            hint = stderr_hint(self.status.stderr_tail, server=self.name, command=self.config.command,
                               child_env=child_env(self.config))
            if hint:  # a certificate / proxy problem: name the variable to set
                self.status.error += f"; {hint}"
        self.status.connected_at = None
        if fatal and self.reconnect:
            self.status.error += (f" (not retried: fix it, then run `toolhost reconnect {self.name}` or reload the "
                                  "config)")
        if self._retry_now and not fatal:  # re-establishing at once (expired session, idle SSE)
            down = ConnectionState.CONNECTING
        else:
            down = ConnectionState.BACKING_OFF if self.reconnect and not fatal else ConnectionState.FAILED
        self._set_state(down, self.status.error)

    def _set_state(self, state: ConnectionState, detail: str | None = None) -> None:
        self.status.state = state
        self.status.record_event(f"{state.value}: {detail}" if detail else state.value)
        self._changed()

    def _changed(self) -> None:
        if self.on_status is not None:
            self.on_status(self.status)

    def stderr_tail(self, lines: int = _STDERR_TAIL_LINES) -> str:
        """The last ``lines`` lines the child wrote to stderr during the current attempt (stdio only)."""
        return self.log.tail(lines) if isinstance(self.config, StdioServerConfig) else ""

    # -- calls -------------------------------------------------------------------------
    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout_seconds: float,
        progress_callback: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Forward one ``tools/call`` (see :class:`host.upstream.executor.ToolExecutor` for the contract).

        A 404 for an expired streamable-HTTP session re-initializes the session and retries
        this request once (within the same ``timeout_seconds``); see the module docstring.
        """
        deadline = anyio.current_time() + timeout_seconds
        for attempt in (1, 2):
            client, guard = self._client, self._guard
            if client is None or self.status.state not in AVAILABLE_STATES:
                raise UpstreamUnavailable(self.name, self.status.error or self.status.describe_state())
            try:
                with self.relay.active():
                    return await call_client_tool(
                        client,
                        self.name,
                        tool,
                        arguments,
                        timeout_seconds=timeout_seconds
                        if attempt == 1
                        else max(0.001, deadline - anyio.current_time()),
                        progress_callback=progress_callback,
                        allow_sampling=self.relay.allow_sampling,
                        on_lost=self._connection_lost,
                        guard=guard,
                    )
            except CallTimeout:
                raise CallTimeout(self.name, tool, timeout_seconds) from None
            except UpstreamError as err:
                if attempt == 2 or not self.refused_back_channel(err.code, err.error_message, client):
                    raise
                await self.switch_to_handshake(tool, err.error_message, deadline)
                if current_exchange() is not None:
                    # A 2026-07-28 client: its questions travel as input-required rounds, which the
                    # front end sets up (parks the call) only for a handshake-era upstream, decided
                    # before this call started. Sent again here, the ask would be cancelled; the
                    # client's next call is parked and asked properly.
                    raise UpstreamError(self.name, tool, err.code, f"{err.error_message} (toolhost reconnected "
                                        "the server with the 2025-11-25 handshake, which lets it ask you "
                                        "mid-call: call the tool again)", err.data) from None
            except SessionExpired:
                if attempt == 2:
                    raise UpstreamUnavailable(
                        self.name, "the server forgot the new MCP session too (HTTP 404 with Mcp-Session-Id twice)"
                    ) from None
                self.log.write(f"toolhost: session expired during {tool}; re-initializing and retrying once")
                self._retry_now = True
                self._connection_lost("the server forgot the MCP session (HTTP 404); re-initializing")
                await self._wait_up(deadline)
        raise AssertionError("unreachable")  # pragma: no cover

    def refused_back_channel(self, code: int, message: str, client: Client) -> bool:
        """Whether an error ``(code, message)`` is a 2026-07-28 server refusing its own mid-call request
        (``ctx.elicit()``, sampling, roots) for lack of a back-channel, on a session toolhost chose
        (``protocol: auto``): the cue to reconnect with the handshake (:meth:`switch_to_handshake`)."""
        return (code == INVALID_REQUEST and "no back-channel" in message
                and client.protocol_version >= "2026" and self.config.toolhost.protocol == "auto")

    async def switch_to_handshake(self, what: str, message: str, deadline: float) -> None:
        """Reconnect with the handshake era at once (no backoff), for this and every later request, and
        wait (until ``deadline``, ``anyio.current_time()`` clock) for the new session."""
        asked = re.match(r"Cannot send '([^']+)'", message)
        self.handshake_fallback = (
            "the server asks the client mid-call in the handshake-era style "
            f"(its {asked.group(1) if asked else 'request'} "
            f"was refused on 2026-07-28 during {what}), so toolhost reconnected it with the 2025-11-25 handshake; set "
            f'mcpServers.{self.name}.toolhost.protocol to "legacy" to start that way')
        self.log.write(f"toolhost: {self.handshake_fallback}; retrying {what} once")
        self._retry_now = True
        self._connection_lost("reconnecting with the 2025-11-25 handshake (the server asks the client mid-call)")
        await self._wait_up(deadline)

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        """What the server declared in its ``initialize`` result or ``server/discover`` answer (MCP
        2025-11-25 lifecycle, ``capabilities``) on the live session; ``None`` while not connected."""
        client = self._client
        return client.server_capabilities if client is not None else None

    def connected_client(self) -> Client:
        """The live SDK client (for the forwarding helpers in :mod:`host.upstream.forward`).

        Raises:
            UpstreamUnavailable: not connected right now.
        """
        client = self._client
        if client is None or self.status.state not in AVAILABLE_STATES:
            raise UpstreamUnavailable(self.name, self.status.error or self.status.describe_state())
        return client

    async def _wait_up(self, deadline: float) -> None:
        """Wait until the session is re-established (bounded by ``deadline``)."""
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
            await self._up.wait()

    def _transport_closed(self, reason: str) -> None:
        """Guard callback: the read side ended (a stdio child exited, a stream closed)."""
        if self._stop.is_set():
            return
        if isinstance(self.config, StdioServerConfig) and "end of its output" in reason:
            reason = "the server process exited (its stdout closed)"
        guard = self._guard
        if guard is not None and guard.idle_timeout:
            self._retry_now = True  # an idle SSE stream: reconnect quietly and at once
            reason = "the SSE stream was idle past its read timeout; reconnecting"
        self._connection_lost(reason)

    def _connection_lost(self, reason: str) -> str | None:
        """Mark the session down (at once) and wake the owner task; returns the recorded reason."""
        if self.status.state in AVAILABLE_STATES and not self._stop.is_set():
            self._fail("connection", reason)
            self._client = None
            self._up = anyio.Event()  # waiters (session recovery) wake on the next session
            self._lost.set()
        return self.status.error

"""The gateway's composition root: every object ``toolhost serve`` runs is built here, in one place.

Three steps, like the MCP SDK's low-level ``Server`` (construct, then run, then close):

1. :func:`build_gateway` (``GatewayOptions`` → :class:`Gateway`) loads the config, opens the
   permission store, checks the access mode against the transport and the address (a refusal is a
   :class:`GatewayError` with the message and exit code), binds the HTTP socket (so a taken port
   fails before any server starts), and builds the runtime with its policy stack
   (:func:`host.access.build_policy`), the operator surface (admin API, console, health, metrics),
   who each request is (API keys or the open-access principal) and the tool-change notifier;
2. :meth:`Gateway.run` serves at once, over HTTP or stdio, while the upstream servers connect in the
   background: ``/healthz`` and ``ping`` answer immediately, ``/readyz`` is 503 with the
   per-server body until a server is usable, ``initialize`` (its capabilities come from the
   upstreams), a listing or a call waits (at most ``toolhost.startup_wait_seconds``, default 10 s)
   for every server's first connect attempt to end, and servers that connect later announce their tools with
   ``notifications/tools/list_changed``. The URL banner
   ("toolhost serving N tools at URL") and ``serve.json`` (where the CLI finds this gateway) follow
   once every server's first attempt ended;
3. :meth:`Gateway.close` closes the store and removes the files the run wrote.

The CLI command (:mod:`servers.cli.serve`) only parses options and calls these; the library example
in the README builds the same policy stack with :func:`host.access.build_policy`.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from rich.console import Console

from servers.http.defaults import DEFAULT_HOST, DEFAULT_PORT, MCP_PATH

if TYPE_CHECKING:
    from host.access import AccessControl, AuthMode
    from host.config import HostConfig
    from host.runtime import HostRuntime
    from servers.admin.operator_surface import OperatorSurface
    from servers.gateway.notify import ToolsChangedNotifier
    from servers.observability.serve_output import ServeOutput
    from servers.shared.endpoint import ServeClaim

__all__ = [
    "DEFER_EVENTS_ENV",
    "GC_FREEZE_ENV",
    "Gateway",
    "GatewayError",
    "GatewayOptions",
    "build_gateway",
]

DEFER_EVENTS_ENV = "TOOLHOST_DEFER_EVENTS"
"""``0``: ``serve`` writes event-log entries on the request path (A/B runs of ``bench/gateway.py
--alt``); default: after each answer (:meth:`host.events.EventLog.defer`), over HTTP and stdio."""

GC_FREEZE_ENV = "TOOLHOST_GC_FREEZE"
"""``0``: keep Python's garbage-collector defaults (A/B runs; :func:`_freeze_startup_heap`)."""
GC_YOUNG_THRESHOLD = 10_000
"""Allocations between young-generation collections while serving (Python's default: 700)."""



class GatewayError(Exception):
    """The gateway cannot start as asked: ``message`` says why and what to do; ``exit_code`` for the CLI."""

    def __init__(self, message: str, exit_code: int = 2, *, kind: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.kind = kind
        """``config.error`` (the config cannot be used) or ``error``."""


@dataclass(frozen=True)
class GatewayOptions:
    """What ``toolhost serve`` was asked for (see its ``--help``).

    Attributes:
        config: the ``mcpServers`` config file (``None``: the bundled default).
        data_dir: the data folder (``None``: ``$TOOLHOST_HOME`` or the per-user default).
        host: interface to bind for HTTP; port: TCP port (0: any free port).
        stdio: serve MCP over stdin/stdout instead of HTTP.
        expose: ``search`` (tool_search + call_tool) or ``all`` (every tool listed).
        auth: ``auto`` (permissions once users exist), ``on`` or ``off``.
        user: the user the stdio client acts as.
        db_url: the permission database (``None``: SQLite in the data folder).
        log_format: ``text`` (console lines) or ``json``.
        watch_config: reload when the config file changes.
        code_mode: offer the ``execute`` meta tool (also ``toolhost.code_mode.enabled``).
        metrics_host, metrics_port: also serve ``/metrics`` without a credential on a listener of
            its own (:mod:`servers.http.metrics_listener`; ``metrics_port=None``: off; beyond
            loopback a warning notice).
    """

    config: Path | None = None
    data_dir: Path | None = None
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    stdio: bool = False
    expose: Literal["search", "all"] = "search"
    auth: AuthMode = "auto"
    user: str | None = None
    db_url: str | None = None
    log_format: Literal["text", "json"] = "text"
    watch_config: bool = False
    code_mode: bool = False
    metrics_host: str = DEFAULT_HOST
    metrics_port: int | None = None


@dataclass
class Gateway:
    """One built gateway (:func:`build_gateway`); :meth:`run` serves it, :meth:`close` releases it.

    Attributes:
        options: what it was built from; config: the parsed config; root: the data folder.
        access: the permission store (``None`` with ``--auth off``); enforce: grants decide.
        runtime: connections, registry, search and the call pipeline (not yet entered).
        surface: metrics, events, admin API and console, health routes, config reload.
        notifier: sends ``list_changed`` to connected clients when the registry changes.
        principal_for: who each MCP request is; verifier/auth: the API-key check for HTTP (or ``None``).
        sock: the bound HTTP socket (``None`` for stdio).
        metrics_sock: the bound socket of the credential-free ``/metrics`` listener, or ``None``.
        notices: ``(kind, text)`` for the operator, printed by the CLI: ``config.warning``,
            ``open_access`` or ``warning``.
    """

    options: GatewayOptions
    config: HostConfig
    root: Path
    access: AccessControl | None
    enforce: bool
    runtime: HostRuntime
    surface: OperatorSurface
    notifier: ToolsChangedNotifier
    principal_for: Callable[[Any], Any]
    verifier: Any = None
    auth: Any = None
    sock: socket.socket | None = None
    metrics_sock: socket.socket | None = None
    notices: list[tuple[str, str]] = field(default_factory=list)
    claim: ServeClaim | None = None
    """The data folder's serve lock (HTTP; :func:`servers.shared.endpoint.claim_data_dir`)."""

    async def run(self, output: ServeOutput) -> None:
        """Serve until a signal (SIGINT/SIGTERM), end of stdin (stdio) or a failure; see module docstring.

        ``output`` writes the listening line, the server table and the banner in ``--log-format``."""
        from servers.gateway.server import create_registry_server
        from servers.http.runner import serve_http, shutdown_on_signals
        from servers.observability.http_metrics import with_http_metrics
        from servers.stdio.wire import serve_stdio

        o, rt, surface = self.options, self.runtime, self.surface
        listening = anyio.Event()
        url_box: list[str] = []

        async def announce_when_settled() -> None:
            await rt.manager.listings_settled()  # connected, and the tools they listed scanned into the registry
            if os.environ.get(GC_FREEZE_ENV, "1") != "0":
                _freeze_startup_heap()  # what start-up built (registry, search index) is never collected again
            statuses = rt.statuses()
            rt.manager.on_status = surface.status_listener(output.status_printer(statuses))  # one line per change
            output.servers(statuses)
            if o.stdio:
                return
            await listening.wait()
            url = url_box[0]
            surface.announce(url)
            output.serving(url, len(rt.registry), api_key_required=self.enforce,
                           console_url=f"{url.removesuffix(MCP_PATH)}/admin", token_file=surface.token_path)

        def on_listening(url: str) -> None:
            url_box.append(url)
            listening.set()
            output.listening(url, sum(1 for s in rt.statuses() if s.state.value == "connecting"))

        async with shutdown_on_signals() as stop, anyio.create_task_group() as guard:
            guard.start_soon(_stop_when, stop, rt)  # Ctrl+C while connecting abandons the attempts at once
            # the first round is logged (and counted) but not printed: the server table follows it
            rt.manager.on_status = surface.status_listener(_silent if output.fmt == "text" else None)
            rt.registry.subscribe(self.notifier.changed)  # late servers' tools: list_changed to the clients
            async with rt:
                surface.events.seed(rt.statuses())
                guard.start_soon(surface.run_background)
                guard.start_soon(self.notifier.run)
                guard.start_soon(announce_when_settled)
                if self.metrics_sock is not None:
                    from servers.http.metrics_listener import serve_metrics

                    guard.start_soon(serve_metrics, self.metrics_sock, surface.metrics, stop)
                srv = create_registry_server(rt, expose=o.expose, principal_for=self.principal_for,
                                             access=self.access if self.enforce else None,
                                             notifier=self.notifier,
                                             settle_seconds=self.config.defaults.startup_wait_seconds,
                                             usage_access=self.access)
                surface.server = srv
                if os.environ.get(DEFER_EVENTS_ENV, "1") != "0":
                    rt.event_log.defer()  # events written once each answer is sent
                if stop.is_set():
                    pass
                elif o.stdio:
                    # the SDK builds the stdio session's capabilities (prompts, resources, completions:
                    # the upstreams') once, as serving starts: give the first connects their bounded wait
                    await _settled_unless_stopped(rt, stop, self.config.defaults.startup_wait_seconds)
                    if not stop.is_set():
                        await serve_stdio(srv, stop=stop, after_send=rt.event_log.flush)
                else:
                    await serve_http(
                        srv,
                        after_response=rt.event_log.flush,
                        host=o.host,
                        port=o.port,
                        sock=self.sock,
                        stop=stop,
                        token_verifier=self.verifier,
                        auth=self.auth,
                        session_limits=self.config.defaults.sessions,
                        routes=surface.routes(),
                        wrap_app=with_http_metrics(surface.metrics),
                        on_ready=on_listening,
                    )
            guard.cancel_scope.cancel()

    def close(self) -> None:
        """Remove the local admin token and ``serve.json`` this process wrote (HTTP), close the store
        and the sockets."""
        try:
            self.surface.close()
            if self.access is not None:
                self.access.close()
        finally:
            for sock in (self.sock, self.metrics_sock):
                if sock is not None:
                    sock.close()
            if self.claim is not None:
                self.claim.release()


def build_gateway(options: GatewayOptions, console: Console | None = None) -> Gateway:
    """Build every object of one gateway (module docstring, step 1); nothing connects yet.

    ``console`` receives the operator surface's event lines (``None``: log only).

    Raises:
        GatewayError: the config is invalid, the permission store cannot be opened, ``--user`` names
            no user or contradicts ``--auth off``, permissions are on for stdio without ``--user``,
            open access was asked for on a non-loopback address, or the port cannot be bound. The
            store is closed again before raising.
    """
    from host.access import build_policy, is_loopback, open_access
    from host.access.script_approvals import ScriptApprovalGate
    from host.access.taint_audit import taint_drop_auditor
    from host.config import load_config
    from host.errors import ConfigError
    from host.limits import rate_limiter_for
    from host.paths import data_dir as resolve_data_dir
    from host.runtime import HostRuntime
    from host.store import StoreError
    from registry import Principal
    from servers.admin.operator_surface import OperatorSurface
    from servers.cli.local_user import UnknownUser, require_user
    from servers.gateway.notify import ToolsChangedNotifier
    from servers.http.api_keys import ApiKeyVerifier, auth_settings, principal_resolver
    from servers.http.runner import host_for_url
    from servers.shared.endpoint import ServeRunning, claim_data_dir

    o = options
    if o.expose not in ("search", "all"):
        raise GatewayError(f"--expose must be 'search' or 'all', got {o.expose!r}")
    root = resolve_data_dir(o.data_dir)
    try:
        cfg = load_config(o.config, data_dir=root)
    except ConfigError as e:
        raise GatewayError(str(e), kind="config.error") from None
    notices = [("config.warning", w) for w in cfg.warnings]
    try:
        access, enforce = open_access(root, o.auth, db_url=o.db_url, learned_scan=cfg.defaults.definition_scan.learned)
    except (ValueError, StoreError) as e:
        raise GatewayError(str(e)) from None
    claim: ServeClaim | None = None
    try:
        if access is not None:
            access.audit_writer.configure(durability=cfg.defaults.audit_durability,
                                          flush_interval_seconds=cfg.defaults.audit_flush_seconds)
            access.pins.new_tools = cfg.defaults.new_tools  # held (default) or trusted
        if o.user is not None:  # fail closed: a named user must exist, even where no users means open access
            if access is None:
                raise GatewayError(f"error: --user {o.user} needs permissions, but --auth off disables them")
            try:
                require_user(access, o.user, root)
            except UnknownUser as e:
                raise GatewayError(f"error: {e}") from None
            enforce = True
        if not enforce and not o.stdio and not is_loopback(o.host):
            if o.auth != "off":
                raise GatewayError(f"refusing to serve every tool without API keys on {o.host}: add users "
                                   "(`toolhost users add`, `toolhost keys create`) or pass --auth off to allow it")
            notices.append(("warning", f"warning: --auth off on {o.host}: anyone who can reach this port may run "
                                       "every tool"))
        if enforce and o.stdio and not o.user:
            raise GatewayError("permissions are on: pass --user NAME for the stdio client (see `toolhost users list`)")
        try:
            if not o.stdio:
                claim = claim_data_dir(root)  # one HTTP serve per data folder
        except ServeRunning as e:
            raise GatewayError(f"error: {e}") from None
        sock = None if o.stdio else _bind(o.host, o.port)
        try:
            metrics_sock = _metrics_socket(o, notices)
        except GatewayError:
            if sock is not None:
                sock.close()
            raise
        rt = HostRuntime(
            cfg,
            data_dir=root,
            reconnect=True,
            connect_in_background=True,
            conversation_id=f"serve-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}",
            policy=build_policy(access, enforce=enforce),
            # with a store, also in open access: the session-taint rule's approvals wait there
            approvals=access.approval_hook() if access is not None else None,
            auditor=access,  # every call audited, whatever the transport (also in open access)
            limiter=rate_limiter_for(access.store if access is not None else None, cfg.defaults.rate_limits),
            code_mode=cfg.defaults.code_mode.to_config(enabled=True if o.code_mode else None),
            script_approvals=ScriptApprovalGate(access) if enforce and access is not None else None,
            taint_listeners=[access.audit_taint] if access is not None else (),
            prescorer=access.pins.safety if access is not None else None,  # learned scan in a thread, before listing
        )
        if access is not None:
            rt.taint.subscribe_drops(taint_drop_auditor(access))  # a tainted session dropped for room is audited
            access.watch(rt.registry, auto_accept=rt.auto_accepts)  # pin definitions from the first listing on
        surface = OperatorSurface(rt, access, root, o.config, console, watch_config=o.watch_config,
                                  http=not o.stdio, db_url=o.db_url)
        verifier = settings = None
        if not enforce:
            local = Principal(user=o.user or "local")
            resolve: Callable[[Any], Any] = lambda _ctx: local  # noqa: E731 - one constant principal
            notices.append(("open_access", "no users are configured, so every client may use every tool"))
        else:
            assert access is not None
            try:
                resolve = principal_resolver(access, stdio_user=o.user if o.stdio else None)
            except StoreError as e:
                raise GatewayError(str(e)) from None
            bound_port = sock.getsockname()[1] if sock is not None else o.port
            verifier = ApiKeyVerifier(access, local_token=surface.auth.local_token)
            settings = auth_settings(f"http://{host_for_url(o.host)}:{bound_port}{MCP_PATH}")
    except BaseException:
        if access is not None:
            access.close()
        if claim is not None:
            claim.release()
        raise
    return Gateway(options=o, config=cfg, root=root, access=access, enforce=enforce, runtime=rt,
                   surface=surface, notifier=ToolsChangedNotifier(), principal_for=resolve, verifier=verifier,
                   auth=settings, sock=sock, metrics_sock=metrics_sock, notices=notices, claim=claim)


def _metrics_socket(o: GatewayOptions, notices: list[tuple[str, str]]) -> socket.socket | None:
    """Bind the credential-free ``/metrics`` listener (``None`` when ``metrics_port`` is unset);
    a warning notice when it is reachable beyond loopback."""
    from host.access import is_loopback

    if o.metrics_port is None:
        return None
    if not is_loopback(o.metrics_host):
        notices.append(("warning", f"warning: /metrics is served without a credential on {o.metrics_host}: anyone "
                                   "who can reach that port sees tool names and call counts (bind --metrics-host to "
                                   "an interface only your monitoring reaches)"))
    return _bind(o.metrics_host, o.metrics_port, flag="--metrics-port")


def _silent(_status: Any) -> None:
    """A status printer that prints nothing (the first connects are summed up by the server table)."""


async def _settled_unless_stopped(rt: HostRuntime, stop: anyio.Event, seconds: float) -> None:
    """Wait for the servers' first connects (at most ``seconds``), or until ``stop`` is set."""
    async with anyio.create_task_group() as tg:

        async def until_stop() -> None:
            await stop.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(until_stop)
        await rt.settled(seconds)
        tg.cancel_scope.cancel()


async def _stop_when(stop: anyio.Event, rt: HostRuntime) -> None:
    await stop.wait()
    rt.manager.request_stop()


def _bind(host: str, port: int, *, flag: str = "--port") -> socket.socket:
    """Bind an HTTP socket before connecting any server, so a taken port fails at once."""
    from servers.http.runner import bind_socket

    try:
        return bind_socket(host, port)
    except OSError as e:
        raise GatewayError(f"cannot listen on {host}:{port}: {e.strerror or e} "
                           f"(choose another {flag}, or stop the program using it)") from None


def _freeze_startup_heap() -> None:
    """Collect once, ``gc.freeze()`` what start-up built (modules, registry, search index...), and
    collect the young generation every :data:`GC_YOUNG_THRESHOLD` allocations instead of 700.

    Every full (generation 2) collection walks every tracked object; measured at 32 concurrent
    HTTP clients (gc.callbacks probe, wall clock, loaded machine) serve ran 12 of them in ~3,800
    calls at ~130 ms each, each a pause of the event loop for every client (py-spy: 15% of serve's
    time in gc_collect); 158k tracked objects unfrozen, 13k frozen. Frozen objects are skipped by
    later collections; objects made afterwards are collected as before (frozen start-up garbage
    that later dies is not reclaimed: start-up state lives as long as serve).

    Young collections: each walks the objects of the requests in flight, not the garbage (freed by
    reference counting), so fewer of them cost less in total. Same probe (thread CPU, 32 clients,
    3,200 calls, frozen heap, two runs each): threshold 700: ~1,100 young + ~100 middle + 9 full
    collections (9-16 ms each) = 0.49 s, ~0.13 ms per call (~11% of serve's CPU per call); 10,000:
    ~20 + 2 + 0 = 0.08 s. Cyclic garbage then waits for at most 10,000 allocations.
    Source: Python docs, ``gc.freeze`` and ``gc.set_threshold``.
    """
    import gc

    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)

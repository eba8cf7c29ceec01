"""``toolhost serve``: the registry MCP server over HTTP (with the admin API and console, health and
metrics) or stdio, in front of every configured server."""

from __future__ import annotations

import os
import socket
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from servers.cli.common import (
    ConfigOpt,
    DataDirOpt,
    DbUrlOpt,
    _limiter,
    _load,
    _open_access,
    _run,
    err,
)
from servers.cli.options import AuthChoice, Expose, LogFormat, LogLevel
from servers.http.defaults import DEFAULT_HOST, DEFAULT_PORT, MCP_PATH

DEFER_EVENTS_ENV = "TOOLHOST_DEFER_EVENTS"
"""``0``: ``serve`` writes event-log entries on the request path (A/B runs of ``bench/gateway.py
--alt``); default: after each answer (:meth:`host.events.EventLog.defer`), over HTTP and stdio."""

GC_FREEZE_ENV = "TOOLHOST_GC_FREEZE"
"""``0``: keep Python's garbage-collector defaults (A/B runs; :func:`_freeze_startup_heap`)."""
GC_YOUNG_THRESHOLD = 10_000
"""Allocations between young-generation collections while serving (Python's default: 700)."""

if TYPE_CHECKING:
    import anyio

    from host.runtime import HostRuntime


def _freeze_startup_heap() -> None:
    """Collect once, ``gc.freeze()`` what start-up built (modules, registry, search index...), and
    collect the young generation every :data:`GC_YOUNG_THRESHOLD` allocations instead of 700.

    Every full (generation 2) collection walks every tracked object; measured at 32 concurrent
    HTTP clients (gc.callbacks probe, wall clock, loaded machine) serve ran 12 of them in ~3,800
    calls at ~130 ms each, each a pause of the event loop for every client (py-spy: 15% of serve's
    time in gc_collect); 158k tracked objects unfrozen, 13k frozen. Frozen
    objects are skipped by later collections; objects made afterwards are collected as before
    (frozen start-up garbage that later dies is not reclaimed: start-up state lives as long as serve).

    Young collections: each walks the objects of the requests in flight, not the garbage (freed by
    reference counting), so fewer of them cost less in total. Same probe (thread CPU, 32 clients,
    3,200 calls, frozen heap, two runs each): threshold 700: ~1,100 young + ~100 middle + 9 full
    collections (9-16 ms each) = 0.49 s, ~0.13 ms per call (~11% of serve's CPU per call); 10,000:
    ~20 + 2 + 0 = 0.08 s. Cyclic garbage then waits for at most 10,000 allocations.
    Source: Python docs, ``gc.freeze`` and ``gc.set_threshold``.
    """
    import gc  # noqa: PLC0415

    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


__all__ = ["serve"]


def serve(
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    host: Annotated[str, typer.Option(help="Interface to bind for HTTP.")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port for HTTP (0: any free port).")] = DEFAULT_PORT,
    stdio: Annotated[bool, typer.Option("--stdio", help="Serve MCP over stdin/stdout instead of HTTP.")] = False,
    expose_choice: Annotated[
        Expose,
        typer.Option("--expose", help="'search': tool_search + call_tool (+ always_load tools); 'all': every tool."),
    ] = Expose.search,
    auth_choice: Annotated[
        AuthChoice, typer.Option("--auth", help="Per-user permissions: 'auto' (on once users exist), 'on' or 'off'.")
    ] = AuthChoice.auto,
    user: Annotated[str | None, typer.Option(help="User the stdio client acts as (required with permissions).")] = None,
    db_url: DbUrlOpt = None,
    log_level: Annotated[
        LogLevel, typer.Option("--log-level", help="Events and diagnostics at or above this level.")
    ] = LogLevel.info,
    log_format: Annotated[
        LogFormat, typer.Option("--log-format", help="'text': console lines; 'json': one JSON object per event.")
    ] = LogFormat.text,
    watch_config: Annotated[
        bool, typer.Option("--watch-config", help="Reload when the config file changes (SIGHUP always reloads).")
    ] = False,
) -> None:
    """Start the registry MCP server (streamable HTTP on 127.0.0.1:8765/mcp, or --stdio), with the admin
    console at /admin, the admin API at /admin/api, /healthz, /readyz and /metrics."""
    from servers.observability import configure_logging  # noqa: PLC0415
    from servers.admin.operator_surface import OperatorSurface  # noqa: PLC0415
    import anyio  # noqa: PLC0415

    from host.paths import data_dir as resolve_data_dir  # noqa: PLC0415
    from host.runtime import HostRuntime  # noqa: PLC0415
    from host.store import StoreError  # noqa: PLC0415
    from registry import Principal  # noqa: PLC0415
    from host.access import build_policy, is_loopback  # noqa: PLC0415
    from servers.http.api_keys import ApiKeyVerifier, auth_settings, principal_resolver  # noqa: PLC0415
    from servers.cli.display import live_status, servers_table  # noqa: PLC0415
    from servers.gateway.notify import ToolsChangedNotifier  # noqa: PLC0415
    from servers.gateway.server import create_registry_server  # noqa: PLC0415
    from servers.http.runner import (  # noqa: PLC0415
        event_loop_options,
        host_for_url,
        serve_http,
        shutdown_on_signals,
    )
    from servers.stdio.wire import serve_stdio  # noqa: PLC0415
    from servers.observability.status_events import status_event_printer  # noqa: PLC0415
    from servers.cli.local_user import UnknownUser, require_user  # noqa: PLC0415

    configure_logging(log_level.value, log_format.value)
    from host.tracing import configure_from_env  # noqa: PLC0415

    configure_from_env()  # OpenTelemetry spans when OTEL_* ask for them and the `otel` extra is installed
    expose, auth = expose_choice.value, auth_choice.value
    if expose not in ("search", "all"):
        err.print(f"[red]--expose must be 'search' or 'all', got {expose!r}[/red]")
        raise typer.Exit(2)
    try:
        loop_options = event_loop_options()
    except ValueError as e:
        err.print(f"[red]{e}[/red]")
        raise typer.Exit(2) from None
    cfg, root = _load(config, data_dir)
    access, enforce = _open_access(root, auth, db_url)
    if access is not None:
        access.audit_writer.configure(durability=cfg.defaults.audit_durability,
                                      flush_interval_seconds=cfg.defaults.audit_flush_seconds)
    if user is not None:  # fail closed: a named user must exist, even where no users means open access
        if access is None:
            err.print(f"[red]error:[/red] --user {user} needs permissions, but --auth off disables them")
            raise typer.Exit(2)
        try:
            require_user(access, user, root)
        except UnknownUser as e:
            err.print(f"[red]error:[/red] {e}", highlight=False)
            access.close()
            raise typer.Exit(2) from None
        enforce = True
    if not enforce and not stdio and not is_loopback(host):
        if auth != "off":
            err.print(f"[red]refusing to serve every tool without API keys on {host}[/red]: add users "
                      "(`toolhost users add`, `toolhost keys create`) or pass --auth off to allow it")
            raise typer.Exit(2)
        err.print(f"[bold red]warning:[/bold red] --auth off on {host}: anyone who can reach this port may "
                  "run every tool")
    if enforce and stdio and not user:
        err.print("[red]permissions are on: pass --user NAME for the stdio client[/red] (see `toolhost users list`)")
        raise typer.Exit(2)
    sock = None if stdio else _bind(host, port)

    async def body() -> None:
        run_id = f"serve-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        rt = HostRuntime(
            cfg,
            data_dir=root,
            reconnect=True,
            conversation_id=run_id,
            policy=build_policy(access, enforce=enforce),
            # with a store, also in open access: the session-taint rule's approvals wait there
            approvals=access.approval_hook() if access is not None else None,
            auditor=access,  # every call audited, whatever the transport (also in open access)
            limiter=_limiter(access, cfg),
            taint_listeners=[access.audit_taint] if access is not None else (),
        )
        if access is not None:
            access.watch(rt.registry, auto_accept=rt.auto_accepts)  # pin definitions from the first listing on
        surface = OperatorSurface(rt, access, root, config, err if log_format is LogFormat.text else None,
                                  watch_config=watch_config, http=not stdio, db_url=db_url)
        verifier = settings = None
        if not enforce:
            local = Principal(user=user or "local")
            resolve: Any = lambda _ctx: local  # noqa: E731
            err.print("[yellow]open access:[/yellow] no users are configured, so every client may use every tool "
                      "(add users with `toolhost users add` and restart, or pass --auth on).")
        else:
            assert access is not None
            try:
                resolve = principal_resolver(access, stdio_user=user if stdio else None)
            except StoreError as e:
                err.print(f"[red]{e}[/red]")
                raise typer.Exit(2) from None
            bound_port = sock.getsockname()[1] if sock is not None else port
            verifier = ApiKeyVerifier(access, local_token=surface.auth.local_token)
            settings = auth_settings(f"http://{host_for_url(host)}:{bound_port}{MCP_PATH}")
        async with shutdown_on_signals() as stop, anyio.create_task_group() as guard:
            guard.start_soon(_stop_when, stop, rt)  # Ctrl+C while connecting abandons the attempts at once
            with live_status(err, rt.statuses(), enabled=not stdio) as refresh:
                rt.manager.on_status = refresh
                async with rt:
                    surface.events.seed(rt.statuses())
                    printer = status_event_printer(err) if log_format is LogFormat.text else None
                    rt.manager.on_status = surface.status_listener(printer)  # one line per later state change
                    guard.start_soon(surface.run_background)
                    err.print(servers_table(rt.statuses()))
                    notifier = ToolsChangedNotifier()
                    rt.registry.subscribe(notifier.changed)
                    guard.start_soon(notifier.run)
                    srv = create_registry_server(rt, expose=expose, principal_for=resolve,
                                                 access=access if enforce else None,
                                                 notifier=notifier)  # type: ignore[arg-type]
                    surface.server = srv
                    if os.environ.get(DEFER_EVENTS_ENV, "1") != "0":
                        rt.event_log.defer()  # events written once each answer is sent (issue 12)
                    if os.environ.get(GC_FREEZE_ENV, "1") != "0":
                        _freeze_startup_heap()
                    if stop.is_set():
                        pass
                    elif stdio:
                        await serve_stdio(srv, stop=stop, after_send=rt.event_log.flush)
                    else:
                        await serve_http(
                            srv,
                            after_response=rt.event_log.flush,
                            host=host,
                            port=port,
                            sock=sock,
                            stop=stop,
                            token_verifier=verifier,
                            auth=settings,
                            session_limits=cfg.defaults.sessions,
                            routes=surface.routes(),
                            on_ready=lambda url: surface.announce(url) or err.print(
                                f"[green]toolhost serving {len(rt.registry)} tools at {url}[/green]"
                                + (" (API key required)" if enforce else "")
                                + " (Ctrl+C to stop)\n"
                                + f"admin console {url.removesuffix(MCP_PATH)}/admin (log in with an admin user's "
                                f"API key or the token in {surface.token_path}); /healthz /readyz /metrics",
                                highlight=False,
                            ),
                        )
            guard.cancel_scope.cancel()
        err.print("toolhost stopped; all servers closed.")

    try:
        _run(body, backend_options=loop_options)
    finally:
        if sock is not None:
            for name in ("admin.token", "serve.json"):
                (resolve_data_dir(data_dir) / name).unlink(missing_ok=True)
        if access is not None:
            access.close()
        if sock is not None:
            sock.close()


async def _stop_when(stop: anyio.Event, rt: HostRuntime) -> None:
    await stop.wait()
    rt.manager.request_stop()


def _bind(host: str, port: int) -> socket.socket:
    """Bind the HTTP socket before connecting any server, so a taken port fails at once."""
    from servers.http.runner import bind_socket  # noqa: PLC0415

    try:
        return bind_socket(host, port)
    except OSError as e:
        err.print(f"[red]cannot listen on {host}:{port}: {e.strerror or e}[/red] "
                  "(choose another --port, or stop the program using it)")
        raise typer.Exit(2) from None


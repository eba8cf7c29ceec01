"""The ``toolhost`` command line (typer + rich).

Commands: ``serve``, ``tools``, ``search``, ``call``, ``servers``. Every command takes
``--config PATH`` (default: the bundled config) and ``--data-dir PATH`` (default:
``$TOOLHOST_HOME``, else a per-user folder). This module is the only place that reads argv.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from servers.admin_cli import register as register_admin_commands
from servers.usage_cli import register as register_usage_commands
from servers.reconnect_cli import reconnect_command
from servers.cli_options import (
    AuthChoice,
    Expose,
    LogFormat,
    LogLevel,
    flags_without_placeholder,
    print_remote_search,
)
from servers.serve_defaults import DEFAULT_HOST, DEFAULT_PORT, MCP_PATH

if TYPE_CHECKING:  # the heavy imports (SDK, SQLAlchemy, uvicorn) happen in the commands that need them
    import anyio

    from host.access import AccessControl
    from host.config import HostConfig
    from host.runtime import HostRuntime
    from host.limits import RateLimiter
    from registry import Principal

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolhost",
    help="An open tool host for AI agents: MCP servers merged into one searchable, permissioned registry.",
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
out = Console()
err = Console(stderr=True)
flags_without_placeholder()

def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

        try:
            typer.echo(f"toolhost {version('toolhost')}")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
            typer.echo("toolhost (not installed)")
        raise typer.Exit()


@app.callback()
def _main(
    _version_flag: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """An open tool host for AI agents: MCP servers merged into one searchable, permissioned registry."""


ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="mcpServers JSON config (default: the bundled one).")
]
DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="Data folder (default: $TOOLHOST_HOME, else per-user).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
DbUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--db-url",
        envvar=["TOOLHOST_DATABASE_URL", "TOOLHOST_DB_URL"],
        help="Permission database URL, e.g. postgresql://user:pass@host/toolhost (default: SQLite in the data "
        "folder; also $TOOLHOST_DATABASE_URL, or the older $TOOLHOST_DB_URL).",
        show_envvar=False,
    ),
]
UserOpt = Annotated[
    str | None, typer.Option("--user", help="Act as this user: only their grants apply (default: full local access).")
]


def _load(config: Path | None, data_dir: Path | None) -> tuple[HostConfig, Path]:
    from host.config import load_config  # noqa: PLC0415 - lazy imports keep `toolhost --help` instant
    from host.errors import ConfigError  # noqa: PLC0415
    from host.paths import data_dir as resolve_data_dir  # noqa: PLC0415

    root = resolve_data_dir(data_dir)
    try:
        cfg = load_config(config, data_dir=root)
    except ConfigError as e:
        err.print(f"[red]config error:[/red] {e}")
        raise typer.Exit(2) from None
    for warning in cfg.warnings:
        err.print(f"[yellow]config warning:[/yellow] {warning}")
    return cfg, root


def _run(coro_fn: Any, *args: Any, backend_options: dict[str, Any] | None = None) -> Any:
    import anyio  # noqa: PLC0415

    try:
        return anyio.run(coro_fn, *args, backend_options=backend_options)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        raise typer.Exit(130) from None


async def _with_runtime(
    cfg: HostConfig, root: Path, body: Any, report_failures: bool = True, user: str | None = None,
    db_url: str | None = None,
) -> Any:
    """Connect every server (live status on a terminal), run ``body(runtime, principal)``, disconnect.

    With ``user``, that user's grants, pins and approvals apply; otherwise full local access.
    """
    from host.runtime import HostRuntime  # noqa: PLC0415
    from host.store import StoreError  # noqa: PLC0415
    from registry import Principal  # noqa: PLC0415
    from servers.access_mode import OpenAccessPolicy  # noqa: PLC0415
    from servers.display import live_status  # noqa: PLC0415
    from servers.identity import UnknownUser, local_principal_name, require_user  # noqa: PLC0415

    access = principal = None
    policy: Any = None
    if user is not None:
        access, _enforce = _open_access(root, "on", db_url)
        try:
            require_user(access, user, root)  # type: ignore[arg-type]
            principal = access.principal_for_user(user)  # type: ignore[union-attr]
        except (StoreError, UnknownUser) as e:
            err.print(f"[red]error:[/red] {e}", highlight=False, markup=True)
            access.close()  # type: ignore[union-attr]
            raise typer.Exit(2) from None
        policy = access
    else:
        # The local admin sees everything, but definition pins still hold (a rug-pulled tool is
        # refused here too until `toolhost pins diff` + `pins accept --hash`).
        access, _enforce = _open_access(root, "auto", db_url)
        policy = OpenAccessPolicy(access, fail_closed=False) if access is not None else None
    rt = HostRuntime(cfg, data_dir=root, conversation_id="cli", policy=policy,
                     approvals=access.approval_hook() if user is not None and access is not None else None,
                     auditor=access,  # every CLI call is audited (principal local:<os user> without --user)
                     limiter=_limiter(access, cfg))
    try:
        if access is not None:
            access.watch(rt.registry)
        with live_status(err, rt.statuses()) as refresh:
            rt.manager.on_status = refresh
            async with rt:
                rt.manager.on_status = None
                if report_failures:
                    _report_failures(rt)
                return await body(rt, principal or Principal(user=local_principal_name()))
    finally:
        if access is not None:
            access.close()


def _limiter(access: AccessControl | None, cfg: HostConfig) -> RateLimiter | None:
    """The config's rate limits over the permission database (shared by every process using it)."""
    from host.limits import RateLimiter  # noqa: PLC0415
    if access is None or cfg.defaults.rate_limits is None:
        return None
    return RateLimiter(access.store, cfg.defaults.rate_limits)


def _report_failures(rt: HostRuntime) -> None:
    from servers.display import servers_table  # noqa: PLC0415

    failed = [s for s in rt.statuses() if s.error]
    if failed:
        err.print(servers_table(failed))


@app.command()
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
    from servers.admin.local_admin import LocalAdminPolicy  # noqa: PLC0415
    from servers.observability import configure_logging  # noqa: PLC0415
    from servers.operator_surface import OperatorSurface  # noqa: PLC0415
    import anyio  # noqa: PLC0415

    from host.paths import data_dir as resolve_data_dir  # noqa: PLC0415
    from host.runtime import HostRuntime  # noqa: PLC0415
    from host.store import StoreError  # noqa: PLC0415
    from registry import Principal  # noqa: PLC0415
    from servers.access_mode import OpenAccessPolicy, is_loopback  # noqa: PLC0415
    from servers.auth import ApiKeyVerifier, auth_settings, principal_resolver  # noqa: PLC0415
    from servers.display import live_status, servers_table  # noqa: PLC0415
    from servers.notify import ToolsChangedNotifier  # noqa: PLC0415
    from servers.registry_server import create_registry_server  # noqa: PLC0415
    from servers.serve import (  # noqa: PLC0415
        event_loop_options,
        host_for_url,
        serve_http,
        serve_stdio,
        shutdown_on_signals,
    )
    from servers.status_events import status_event_printer  # noqa: PLC0415
    from servers.identity import UnknownUser, require_user  # noqa: PLC0415

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
        if access is None:
            policy: Any = None
        else:
            policy = access if enforce else OpenAccessPolicy(access)
            policy = LocalAdminPolicy(policy, access)  # the CLI's calls through this serve (local admin token)
        rt = HostRuntime(
            cfg,
            data_dir=root,
            reconnect=True,
            conversation_id=run_id,
            policy=policy,
            approvals=access.approval_hook() if enforce and access is not None else None,
            auditor=access,  # every call audited, whatever the transport (also in open access)
            limiter=_limiter(access, cfg),
        )
        if access is not None:
            access.watch(rt.registry)  # pin definitions from the first listing on (BR-24)
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
                    if stop.is_set():
                        pass
                    elif stdio:
                        await serve_stdio(srv, stop=stop)
                    else:
                        await serve_http(
                            srv,
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
    from servers.serve import bind_socket  # noqa: PLC0415

    try:
        return bind_socket(host, port)
    except OSError as e:
        err.print(f"[red]cannot listen on {host}:{port}: {e.strerror or e}[/red] "
                  "(choose another --port, or stop the program using it)")
        raise typer.Exit(2) from None


def _open_access(root: Path, mode: str, db_url: str | None) -> tuple[AccessControl | None, bool]:
    from host.store import StoreError  # noqa: PLC0415
    from servers.access_mode import open_access  # noqa: PLC0415

    try:
        return open_access(root, mode, db_url=db_url)  # type: ignore[arg-type]
    except (ValueError, StoreError) as e:
        err.print(f"[red]{e}[/red]")
        raise typer.Exit(2) from None


@app.command()
def tools(
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    db_url: DbUrlOpt = None,
    show_all: Annotated[bool, typer.Option("--all", help="Also list held tools (invalid definitions) with the reason.")] = False,
) -> None:
    """List every tool of every configured server (name, server, risk, timeout, description).

    Asks the running `toolhost serve` of the same data folder when there is one."""
    serve_ = _serve(config, data_dir, db_url)
    if serve_ is not None:
        from servers.remote_cli import tools_via_serve  # noqa: PLC0415

        if tools_via_serve(serve_, out, err, user=user, as_json=as_json, show_all=show_all) is not None:
            return
    from registry.search import tool_definition  # noqa: PLC0415
    from servers.display import tools_table  # noqa: PLC0415

    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime, principal: Principal) -> None:
        records = rt.visible_tools(principal)
        held = [(s.name, t, r) for s in rt.statuses() for t, r in s.held.items()] if show_all else []
        if as_json:
            rows = [tool_definition(t) for t in records]
            rows += [{"name": t, "server": srv, "held": True, "reason": r} for srv, t, r in held]
            out.print_json(json.dumps(rows))
        else:
            out.print(tools_table(records, title=f"{len(records)} tools"))
            for srv, t, r in held:
                out.print(f"held: {srv}/{t}: {r}", markup=False, soft_wrap=True)

    _run(_with_runtime, cfg, root, body, True, user, db_url)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What you want to do, in a few words.")],
    limit: Annotated[int, typer.Option(min=1, max=50, help="How many tools to return.")] = 5,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    db_url: DbUrlOpt = None,
) -> None:
    """Search the tools of every configured server (BM25 over names, descriptions, parameters).

    When a `toolhost serve` runs on the same data folder, asks it through the admin API instead of
    starting the servers again."""
    remote = _serve(config, data_dir, db_url)
    if remote is not None:
        found = remote.search(query, user, limit)
        if found is not None:
            print_remote_search(out, query, found, as_json)
            return
    from registry.search import tool_definition  # noqa: PLC0415
    from servers.display import tools_table  # noqa: PLC0415

    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime, principal: Principal) -> None:
        result = rt.search(query, principal, limit=limit)
        if as_json:
            out.print_json(json.dumps([tool_definition(h.tool) | {"score": h.score} for h in result.hits]))
            return
        if not result.hits:
            out.print(result.message or f"No tool matches {query!r}.", soft_wrap=True)
            return
        out.print(tools_table([h.tool for h in result.hits], title=f"Top {len(result.hits)} for {query!r}"))

    _run(_with_runtime, cfg, root, body, True, user, db_url)


@app.command()
def call(
    name: Annotated[str, typer.Argument(help="Qualified tool name, e.g. orders__get_order.")],
    arguments: Annotated[str, typer.Argument(help='Arguments as a JSON object, e.g. \'{"order_id": "A1001"}\'.')] = "{}",
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    db_url: DbUrlOpt = None,
) -> None:
    """Call one tool by its qualified name; exits 1 when the result is an error.

    Runs through the running `toolhost serve` of the same data folder when there is one."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as e:
        err.print(f"[red]arguments are not valid JSON:[/red] {e.msg} at column {e.colno}; pass an object like '{{}}'")
        raise typer.Exit(2) from None
    if not isinstance(parsed, dict):
        err.print(f"[red]arguments must be a JSON object, got {type(parsed).__name__}[/red]")
        raise typer.Exit(2)
    serve_ = _serve(config, data_dir, db_url)
    if serve_ is not None:
        from servers.remote_cli import call_via_serve  # noqa: PLC0415

        failed = call_via_serve(serve_, out, err, name=name, arguments=parsed, user=user, as_json=as_json)
        if failed is not None:
            if failed:
                raise typer.Exit(1)
            return
    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime, principal: Principal) -> bool:
        result = await rt.call(name, parsed, principal)
        if as_json:
            out.print_json(result.model_dump_json(exclude_none=True))
        else:
            for block in result.content:
                text = getattr(block, "text", None)
                out.print(text if text is not None else f"[{block.type} content]", markup=False, soft_wrap=True)
            if result.is_error and result.error is not None:
                err.print(f"[red]{result.status.value}[/red] at {result.error.where or 'call'}")
        return result.is_error

    if _run(_with_runtime, cfg, root, body, True, user, db_url):
        raise typer.Exit(1)


@app.command()
def servers(config: ConfigOpt = None, data_dir: DataDirOpt = None, as_json: JsonOpt = False,
            db_url: DbUrlOpt = None) -> None:
    """Show every configured server's status (connected / failed with reason, tool count): the running
    `toolhost serve`'s view when one serves this data folder, else after connecting each one.

    Exits 1 when any server failed to connect."""
    serve_ = _serve(config, data_dir, db_url)
    if serve_ is not None:
        from servers.remote_cli import servers_via_serve  # noqa: PLC0415

        failed = servers_via_serve(serve_, out, err, as_json=as_json)
        if failed is not None:
            if failed:
                raise typer.Exit(1)
            return
    from servers.display import servers_table  # noqa: PLC0415

    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime, _principal: Principal) -> bool:
        if as_json:
            rows = [
                {
                    "name": s.name,
                    "transport": s.transport,
                    "state": s.state.value,
                    "tools": s.tool_count,
                    "error": s.error,
                    "stderr_tail": s.stderr_tail,
                    "warnings": s.warnings,
                    "connect_seconds": s.connect_seconds,
                    "held": s.held,
                    "next_attempt_at": s.next_attempt_at,
                }
                for s in rt.statuses()
            ]
            out.print_json(json.dumps(rows))
        else:
            out.print(servers_table(rt.statuses()))
        return any(s.error for s in rt.statuses())

    if _run(_with_runtime, cfg, root, body, False):
        raise typer.Exit(1)


def _serve(config: Path | None, data_dir: Path | None, db_url: str | None) -> Any:
    """The running serve of this data folder and store (same config when --config is given), or ``None``."""
    from servers.serve_client import running_serve  # noqa: PLC0415

    return running_serve(data_dir, db_url=db_url, config=config)


register_admin_commands(app)
app.command("reconnect")(reconnect_command)
register_usage_commands(app)


def main() -> None:
    """Console-script entry point: runs the app; a :class:`host.errors.HostError` (bad data folder,
    unreadable config, …) becomes one ``error:`` line and exit status 2, never a traceback."""
    from host.errors import HostError  # noqa: PLC0415

    try:
        app(prog_name="toolhost", standalone_mode=True)
    except HostError as e:
        err.print(f"[red]error:[/red] {e}", markup=True, highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    sys.exit(main())

"""``toolhost serve``: the registry MCP server over HTTP (with the admin API and console, health and
metrics) or stdio, in front of every configured server. The command parses its options; the gateway
itself is built and run by :mod:`servers.compose`."""

from __future__ import annotations

from typing import Annotated

import typer

from servers.cli.common import ConfigOpt, DataDirOpt, DbUrlOpt, _run, err
from servers.cli.options import AuthChoice, Expose, LogFormat, LogLevel
from servers.http.defaults import DEFAULT_HOST, DEFAULT_PORT

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
    code_mode: Annotated[
        bool,
        typer.Option("--code-mode", help="Offer the 'execute' meta tool: scripts that call tools in a sandbox "
                     "(also toolhost.code_mode.enabled in the config)."),
    ] = False,
) -> None:
    """Start the registry MCP server (streamable HTTP on 127.0.0.1:8765/mcp, or --stdio), with the admin
    console at /admin, the admin API at /admin/api, /healthz, /readyz and /metrics."""

    from rich.markup import escape

    from host.tracing import configure_from_env
    from servers.compose import GatewayError, GatewayOptions, build_gateway
    from servers.http.runner import event_loop_options
    from servers.observability import configure_logging

    configure_logging(log_level.value, log_format.value)
    configure_from_env()  # OpenTelemetry spans when OTEL_* ask for them and the `otel` extra is installed
    console = err if log_format is LogFormat.text else None
    options = GatewayOptions(
        config=config, data_dir=data_dir, host=host, port=port, stdio=stdio, expose=expose_choice.value,  # type: ignore[arg-type]
        auth=auth_choice.value, user=user, db_url=db_url, log_format=log_format.value,  # type: ignore[arg-type]
        watch_config=watch_config, code_mode=code_mode,
    )
    try:
        loop_options = event_loop_options()
    except ValueError as e:
        err.print(f"[red]{escape(str(e))}[/red]", highlight=False)
        raise typer.Exit(2) from None
    try:
        gateway = build_gateway(options, console)
    except GatewayError as e:
        err.print(f"[red]{escape(e.message)}[/red]", highlight=False)
        raise typer.Exit(e.exit_code) from None
    try:
        for notice in gateway.notices:
            err.print(f"[yellow]{escape(notice)}[/yellow]", highlight=False)
        _run(gateway.run, console, backend_options=loop_options)
        err.print("toolhost stopped; all servers closed.")
    finally:
        gateway.close()

"""``toolhost serve``: the registry MCP server over HTTP (with the admin API and console, health and
metrics) or stdio, in front of every configured server. The command parses its options; the gateway
itself is built and run by :mod:`servers.compose`."""

from __future__ import annotations

from typing import Annotated

import typer

from servers.cli.common import ConfigOpt, DataDirOpt, DbUrlOpt, _run
from servers.cli.options import AuthChoice, Expose, LogFormat, LogLevel
from servers.cli.serve_options import (
    AuthOpt,
    ExposeOpt,
    HostOpt,
    LogFormatOpt,
    LogLevelOpt,
    MetricsHostOpt,
    MetricsPortOpt,
    PortOpt,
    ServeUserOpt,
    StdioOpt,
    WatchConfigOpt,
)
from servers.http.defaults import DEFAULT_HOST, DEFAULT_PORT

__all__ = ["serve"]


def serve(
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    host: HostOpt = DEFAULT_HOST,
    port: PortOpt = DEFAULT_PORT,
    stdio: StdioOpt = False,
    expose_choice: ExposeOpt = Expose.search,
    auth_choice: AuthOpt = AuthChoice.auto,
    user: ServeUserOpt = None,
    db_url: DbUrlOpt = None,
    log_level: LogLevelOpt = LogLevel.info,
    log_format: LogFormatOpt = LogFormat.text,
    watch_config: WatchConfigOpt = False,
    metrics_host: MetricsHostOpt = DEFAULT_HOST,
    metrics_port: MetricsPortOpt = None,
    code_mode: Annotated[
        bool,
        typer.Option("--code-mode", envvar="TOOLHOST_CODE_MODE",
                     help="Offer the 'execute' meta tool: scripts that call tools in a sandbox "
                     "(also toolhost.code_mode.enabled in the config)."),
    ] = False,
) -> None:
    """Start the registry MCP server (streamable HTTP on 127.0.0.1:8765/mcp, or --stdio), with the admin
    console at /admin, the admin API at /admin/api, /healthz, /readyz and /metrics."""

    from host.tracing import configure_from_env
    from servers.compose import GatewayError, GatewayOptions, build_gateway
    from servers.http.runner import event_loop_options
    from servers.observability import configure_logging
    from servers.observability.serve_output import ServeOutput

    configure_logging(log_level.value, log_format.value)
    output = ServeOutput(log_format.value)
    configure_from_env()  # OpenTelemetry spans when OTEL_* ask for them and the `otel` extra is installed
    options = GatewayOptions(
        config=config, data_dir=data_dir, host=host, port=port, stdio=stdio, expose=expose_choice.value,  # type: ignore[arg-type]
        auth=auth_choice.value, user=user, db_url=db_url, log_format=log_format.value,  # type: ignore[arg-type]
        watch_config=watch_config, code_mode=code_mode, metrics_host=metrics_host, metrics_port=metrics_port,
    )
    try:
        loop_options = event_loop_options()
    except ValueError as e:
        output.error(str(e))
        raise typer.Exit(2) from None
    try:
        gateway = build_gateway(options, output.console)
    except GatewayError as e:
        (output.config_error if e.kind == "config.error" else output.error)(e.message)
        raise typer.Exit(e.exit_code) from None
    try:
        for kind, text in gateway.notices:
            if kind == "config.warning":
                output.config_warning(text)
            elif kind == "open_access":
                output.open_access()
            else:
                output.warning(text)
        _run(gateway.run, output, backend_options=loop_options)
        output.stopped()
    finally:
        gateway.close()

"""The options of ``toolhost serve``, each also read from a ``TOOLHOST_*`` environment variable.

Clients that start toolhost themselves (Claude Desktop, Cursor, VS Code, the MCP Inspector's stdio
form) own the command line they run, or some of its flags (the Inspector takes ``--config`` for its
own): every option can come from the entry's ``env`` instead. A flag given on the command line wins
over its variable; typer/click read the variable only when the flag is absent (click's ``envvar``).

===================  =======================  ==========================================
option               variable                 values
===================  =======================  ==========================================
``--config``         ``TOOLHOST_CONFIG``      path of an ``mcpServers`` / ``servers`` JSON
``--data-dir``       ``TOOLHOST_HOME``        data folder (:mod:`host.paths`)
``--db-url``         ``TOOLHOST_DATABASE_URL`` (or ``TOOLHOST_DB_URL``)
``--host``           ``TOOLHOST_HOST``        interface to bind
``--port``           ``TOOLHOST_PORT``        0-65535
``--stdio``          ``TOOLHOST_STDIO``       ``1``/``true``/``yes`` or ``0``/``false``/``no``
``--expose``         ``TOOLHOST_EXPOSE``      ``search`` or ``all``
``--auth``           ``TOOLHOST_AUTH``        ``auto``, ``on`` or ``off``
``--user``           ``TOOLHOST_USER``        a user of the data folder
``--log-level``      ``TOOLHOST_LOG_LEVEL``   ``debug``, ``info``, ``warning``, ``error``
``--log-format``     ``TOOLHOST_LOG_FORMAT``  ``text`` or ``json``
``--watch-config``   ``TOOLHOST_WATCH_CONFIG`` boolean, as ``--stdio``
``--metrics-host``   ``TOOLHOST_METRICS_HOST`` interface of the credential-free ``/metrics`` listener
``--metrics-port``   ``TOOLHOST_METRICS_PORT`` its port (0-65535; unset: no such listener)
===================  =======================  ==========================================

A bad value in a variable is refused like the flag's (exit 2, click names the option).
"""

from __future__ import annotations

from typing import Annotated

import typer

from servers.cli.options import AuthChoice, Expose, LogFormat, LogLevel
from servers.http.defaults import DEFAULT_HOST, DEFAULT_PORT

__all__ = [
    "SERVE_ENVVARS",
    "AuthOpt",
    "ExposeOpt",
    "HostOpt",
    "LogFormatOpt",
    "LogLevelOpt",
    "MetricsHostOpt",
    "MetricsPortOpt",
    "PortOpt",
    "ServeUserOpt",
    "StdioOpt",
    "WatchConfigOpt",
]

SERVE_ENVVARS = {
    "--config": "TOOLHOST_CONFIG",
    "--host": "TOOLHOST_HOST",
    "--port": "TOOLHOST_PORT",
    "--stdio": "TOOLHOST_STDIO",
    "--expose": "TOOLHOST_EXPOSE",
    "--auth": "TOOLHOST_AUTH",
    "--user": "TOOLHOST_USER",
    "--log-level": "TOOLHOST_LOG_LEVEL",
    "--log-format": "TOOLHOST_LOG_FORMAT",
    "--watch-config": "TOOLHOST_WATCH_CONFIG",
    "--metrics-host": "TOOLHOST_METRICS_HOST",
    "--metrics-port": "TOOLHOST_METRICS_PORT",
}
"""``{flag: environment variable}`` of ``serve`` (module table; ``--data-dir``/``--db-url``: see there)."""

HostOpt = Annotated[str, typer.Option("--host", envvar=SERVE_ENVVARS["--host"], help="Interface to bind for HTTP.")]
PortOpt = Annotated[
    int, typer.Option("--port", min=0, max=65535, envvar=SERVE_ENVVARS["--port"],
                      help="TCP port for HTTP (0: any free port).")
]
StdioOpt = Annotated[
    bool, typer.Option("--stdio", envvar=SERVE_ENVVARS["--stdio"],
                       help="Serve MCP over stdin/stdout instead of HTTP.")
]
ExposeOpt = Annotated[
    Expose,
    typer.Option("--expose", envvar=SERVE_ENVVARS["--expose"],
                 help="'search': tool_search + call_tool (+ always_load tools); 'all': every tool."),
]
AuthOpt = Annotated[
    AuthChoice, typer.Option("--auth", envvar=SERVE_ENVVARS["--auth"],
                             help="Per-user permissions: 'auto' (on once users exist), 'on' or 'off'.")
]
ServeUserOpt = Annotated[
    str | None, typer.Option("--user", envvar=SERVE_ENVVARS["--user"],
                             help="User the stdio client acts as (required with permissions).")
]
LogLevelOpt = Annotated[
    LogLevel, typer.Option("--log-level", envvar=SERVE_ENVVARS["--log-level"],
                           help="Events and diagnostics at or above this level.")
]
LogFormatOpt = Annotated[
    LogFormat, typer.Option("--log-format", envvar=SERVE_ENVVARS["--log-format"],
                            help="'text': console lines; 'json': one JSON object per line, nothing else on stderr.")
]
WatchConfigOpt = Annotated[
    bool, typer.Option("--watch-config", envvar=SERVE_ENVVARS["--watch-config"],
                       help="Reload when the config file changes (SIGHUP always reloads).")
]
MetricsHostOpt = Annotated[
    str, typer.Option("--metrics-host", envvar=SERVE_ENVVARS["--metrics-host"],
                      help="Interface of the /metrics listener (--metrics-port); beyond loopback: a warning.")
]
MetricsPortOpt = Annotated[
    int | None, typer.Option("--metrics-port", min=0, max=65535, envvar=SERVE_ENVVARS["--metrics-port"],
                             help="Also serve /metrics without a credential on this port of its own "
                             "(0: any free port; default: off).")
]

DEFAULTS = {"host": DEFAULT_HOST, "port": DEFAULT_PORT}
"""The defaults ``serve`` gives ``--host`` and ``--port``."""

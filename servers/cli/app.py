"""The ``toolhost`` command line (typer + rich).

Commands: ``serve`` (:mod:`servers.cli.serve`), ``tools``, ``search``, ``call``, ``servers``
(:mod:`servers.cli.tools`), ``doctor`` (:mod:`servers.cli.doctor`), ``reconnect``, the admin
commands (:mod:`servers.cli.admin_commands`) and ``usage``; shared pieces in
:mod:`servers.cli.common`. Every command takes ``--config PATH`` (default: the bundled config) and
``--data-dir PATH`` (default: ``$TOOLHOST_HOME``, else a per-user folder). This module is the only
place that reads argv.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from servers.cli.admin_commands import register as register_admin_commands
from servers.cli.backup import backup, restore
from servers.cli.common import err
from servers.cli.doctor import doctor
from servers.cli.options import flags_without_placeholder
from servers.cli.reconnect import reconnect_command
from servers.cli.serve import serve
from servers.cli.store_commands import store_app
from servers.cli.taint_reset import taint_app
from servers.cli.tools import call, search, servers, tools
from servers.cli.usage_commands import register as register_usage_commands

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolhost",
    help="An open tool host for AI agents: MCP servers merged into one searchable, permissioned registry.",
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
flags_without_placeholder()


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

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


app.command()(serve)
app.command()(tools)
app.command()(search)
app.command()(call)
app.command()(servers)
app.command()(doctor)
register_admin_commands(app)
app.command("reconnect")(reconnect_command)
app.command()(backup)
app.command()(restore)
register_usage_commands(app)
app.add_typer(taint_app, name="taint")
app.add_typer(store_app, name="store")


def main() -> None:
    """Console-script entry point: runs the app; a :class:`host.errors.HostError` (bad data folder,
    unreadable config, …) becomes one ``error:`` line and exit status 2, never a traceback."""
    from host.errors import HostError

    try:
        app(prog_name="toolhost", standalone_mode=True)
    except HostError as e:
        err.print(f"[red]error:[/red] {e}", markup=True, highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    sys.exit(main())

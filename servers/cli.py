"""The ``toolhost`` command line (typer + rich).

Commands: ``serve``, ``tools``, ``search``, ``call``, ``servers``. Every command takes
``--config PATH`` (default: the bundled config) and ``--data-dir PATH`` (default:
``$TOOLHOST_HOME``, else a per-user folder). This module is the only place that reads argv.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from rich.console import Console

from host.config import HostConfig, load_config
from host.errors import ConfigError
from host.paths import data_dir as resolve_data_dir
from host.runtime import HostRuntime
from registry import Principal
from servers.display import live_status, servers_table, tools_table
from registry.search import tool_definition
from servers.registry_server import create_registry_server
from servers.serve import DEFAULT_HOST, DEFAULT_PORT, serve_http, serve_stdio, shutdown_on_signals

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolhost",
    help="An open tool host for AI agents: MCP servers merged into one searchable, permissioned registry.",
    no_args_is_help=True,
    add_completion=False,
)
out = Console()
err = Console(stderr=True)

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="mcpServers JSON config (default: the bundled one).")
]
DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="Data folder (default: $TOOLHOST_HOME, else per-user).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _load(config: Path | None, data_dir: Path | None) -> tuple[HostConfig, Path]:
    root = resolve_data_dir(data_dir)
    try:
        return load_config(config, data_dir=root), root
    except ConfigError as e:
        err.print(f"[red]config error:[/red] {e}")
        raise typer.Exit(2) from None


def _run(coro_fn: Any, *args: Any) -> Any:
    try:
        return anyio.run(coro_fn, *args)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        raise typer.Exit(130) from None


async def _with_runtime(cfg: HostConfig, root: Path, body: Any, report_failures: bool = True) -> Any:
    """Connect every server (live status on a terminal), run ``body(runtime)``, disconnect."""
    rt = HostRuntime(cfg, data_dir=root, conversation_id="cli")
    with live_status(err, rt.statuses()) as refresh:
        rt.manager.on_status = refresh
        async with rt:
            rt.manager.on_status = None
            if report_failures:
                _report_failures(rt)
            return await body(rt)


def _report_failures(rt: HostRuntime) -> None:
    failed = [s for s in rt.statuses() if s.error]
    if failed:
        err.print(servers_table(failed))


@app.command()
def serve(
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    host: Annotated[str, typer.Option(help="Interface to bind for HTTP.")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="TCP port for HTTP.")] = DEFAULT_PORT,
    stdio: Annotated[bool, typer.Option("--stdio", help="Serve MCP over stdin/stdout instead of HTTP.")] = False,
    expose: Annotated[
        str, typer.Option(help="'search': tool_search + call_tool (+ always_load tools); 'all': every tool.")
    ] = "search",
    user: Annotated[str, typer.Option(help="User the stdio caller acts as.")] = "local",
) -> None:
    """Start the registry MCP server (streamable HTTP on 127.0.0.1:8765/mcp, or --stdio)."""
    if expose not in ("search", "all"):
        err.print(f"[red]--expose must be 'search' or 'all', got {expose!r}[/red]")
        raise typer.Exit(2)
    cfg, root = _load(config, data_dir)

    async def body() -> None:
        run_id = "serve-" + time.strftime("%Y%m%dT%H%M%S")
        rt = HostRuntime(cfg, data_dir=root, reconnect=True, conversation_id=run_id)
        async with shutdown_on_signals() as stop:
            with live_status(err, rt.statuses(), enabled=not stdio) as refresh:
                rt.manager.on_status = refresh
                async with rt:
                    rt.manager.on_status = None
                    err.print(servers_table(rt.statuses()))
                    principal = Principal(user=user)
                    srv = create_registry_server(rt, expose=expose, principal_for=lambda _ctx: principal)  # type: ignore[arg-type]
                    if stdio:
                        await serve_stdio(srv, stop=stop)
                    else:
                        await serve_http(
                            srv,
                            host=host,
                            port=port,
                            stop=stop,
                            on_ready=lambda url: err.print(
                                f"[green]toolhost serving {len(rt.registry)} tools at {url}[/green] (Ctrl+C to stop)"
                            ),
                        )
        err.print("toolhost stopped; all servers closed.")

    _run(body)


@app.command()
def tools(config: ConfigOpt = None, data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:
    """List every tool of every configured server (name, server, risk, timeout, description)."""
    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime) -> None:
        records = rt.visible_tools()
        if as_json:
            out.print_json(json.dumps([tool_definition(t) for t in records]))
        else:
            out.print(tools_table(records, title=f"{len(records)} tools"))

    _run(_with_runtime, cfg, root, body)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What you want to do, in a few words.")],
    limit: Annotated[int, typer.Option(min=1, max=50, help="How many tools to return.")] = 5,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the tools of every configured server (BM25 over names, descriptions, parameters)."""
    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime) -> None:
        result = rt.search(query, limit=limit)
        if as_json:
            out.print_json(json.dumps([tool_definition(h.tool) | {"score": h.score} for h in result.hits]))
            return
        if not result.hits:
            out.print(result.message or f"No tool matches {query!r}.", soft_wrap=True)
            return
        out.print(tools_table([h.tool for h in result.hits], title=f"Top {len(result.hits)} for {query!r}"))

    _run(_with_runtime, cfg, root, body)


@app.command()
def call(
    name: Annotated[str, typer.Argument(help="Qualified tool name, e.g. orders__get_order.")],
    arguments: Annotated[str, typer.Argument(help='Arguments as a JSON object, e.g. \'{"order_id": "A1001"}\'.')] = "{}",
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Call one tool by its qualified name; exits 1 when the result is an error."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as e:
        err.print(f"[red]arguments are not valid JSON:[/red] {e.msg} at column {e.colno}; pass an object like '{{}}'")
        raise typer.Exit(2) from None
    if not isinstance(parsed, dict):
        err.print(f"[red]arguments must be a JSON object, got {type(parsed).__name__}[/red]")
        raise typer.Exit(2)
    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime) -> bool:
        result = await rt.call(name, parsed)
        if as_json:
            out.print_json(result.model_dump_json(exclude_none=True))
        else:
            for block in result.content:
                text = getattr(block, "text", None)
                out.print(text if text is not None else f"[{block.type} content]", markup=False, soft_wrap=True)
            if result.is_error and result.error is not None:
                err.print(f"[red]{result.status.value}[/red] at {result.error.where or 'call'}")
        return result.is_error

    if _run(_with_runtime, cfg, root, body):
        raise typer.Exit(1)


@app.command()
def servers(config: ConfigOpt = None, data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:
    """Connect to every configured server and show its status (connected / failed with reason, tool count)."""
    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime) -> None:
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
                }
                for s in rt.statuses()
            ]
            out.print_json(json.dumps(rows))
        else:
            out.print(servers_table(rt.statuses()))

    _run(_with_runtime, cfg, root, body, False)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="toolhost")


if __name__ == "__main__":
    sys.exit(main())

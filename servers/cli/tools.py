"""``toolhost tools|search|call|servers``: the registry from the command line, through a running serve
of the data folder when there is one (:mod:`servers.cli.remote`), else by connecting every server."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from servers.cli.common import (
    ConfigOpt,
    DataDirOpt,
    DbUrlOpt,
    JsonOpt,
    UserOpt,
    _load,
    _run,
    _serve,
    _with_runtime,
    err,
    out,
)
from servers.cli.options import json_object, print_search, remote_search_table

if TYPE_CHECKING:
    from host.runtime import HostRuntime
    from registry import Principal

__all__ = ["call", "search", "servers", "tools"]


def tools(
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    db_url: DbUrlOpt = None,
    show_all: Annotated[bool, typer.Option(
        "--all", help="Also list held tools (invalid definitions) with the reason.")] = False,
) -> None:
    """List every tool of every configured server (name, server, risk, timeout, description).

    Asks the running `toolhost serve` of the same data folder when there is one."""
    serve_ = _serve(config, data_dir, db_url)
    if serve_ is not None:
        from servers.cli.remote import tools_via_serve

        if tools_via_serve(serve_, out, err, user=user, as_json=as_json, show_all=show_all) is not None:
            return
    from registry.search import tool_definition
    from servers.cli.display import tools_table

    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime, principal: Principal) -> None:
        records = rt.visible_tools(principal)
        held = [(s.name, t, r) for s in rt.statuses() for t, r in s.held.items()] if show_all else []
        if as_json:
            rows = [tool_definition(t) | {"flow": rt.taint.labels(t).as_dict()} for t in records]
            rows += [{"name": t, "server": srv, "held": True, "reason": r} for srv, t, r in held]
            out.print_json(json.dumps(rows))
        else:
            out.print(tools_table(records, title=f"{len(records)} tools", labels=rt.taint.labels))
            for srv, t, r in held:
                out.print(f"held: {srv}/{t}: {r}", markup=False, soft_wrap=True)

    _run(_with_runtime, cfg, root, body, True, user, db_url)


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
            if print_search(out, err, found, as_json, lambda: remote_search_table(found)):
                raise typer.Exit(2)
            return
    from servers.cli.display import tools_table
    from servers.shared.search_view import search_view

    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime, principal: Principal) -> int:
        result = rt.search(query, principal, limit=limit)
        return print_search(out, err, search_view(query, result, rt.taint.labels), as_json,
                            lambda: tools_table([h.tool for h in result.hits],
                                                title=f"Top {len(result.hits)} for {query!r}", labels=rt.taint.labels))

    if _run(_with_runtime, cfg, root, body, True, user, db_url):
        raise typer.Exit(2)


def call(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Qualified tool name, e.g. orders__get_order.")],
    arguments: Annotated[str, typer.Argument(
        metavar="ARGS", callback=json_object,
        help='Arguments as a JSON object, e.g. \'{"order_id": "A1001"}\'.')] = "{}",
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    db_url: DbUrlOpt = None,
) -> None:
    """Call one tool by its qualified name; exits 1 when the result is an error.

    Runs through the running `toolhost serve` of the same data folder when there is one."""
    parsed: dict = arguments  # type: ignore[assignment]  # the json_object callback parsed it
    serve_ = _serve(config, data_dir, db_url)
    if serve_ is not None:
        from servers.cli.remote import call_via_serve

        if _answered(call_via_serve(serve_, out, err, name=name, arguments=parsed, user=user, as_json=as_json)):
            return
    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime, principal: Principal) -> bool:
        from host.calls import TextBlock

        result = await rt.call(name, parsed, principal)
        if as_json:
            out.print_json(result.model_dump_json(exclude_none=True))
        else:
            for block in result.content:
                text = block.text if isinstance(block, TextBlock) else f"[{block.type} content]"
                out.print(text, markup=False, soft_wrap=True)
            if result.is_error and result.error is not None:
                from servers.cli.remote import print_call_failure

                print_call_failure(err, result.status.value, result.error.where)
        return result.is_error

    if _run(_with_runtime, cfg, root, body, True, user, db_url):
        raise typer.Exit(1)


def _answered(failed: bool | None) -> bool:
    """Whether the running serve answered (``failed`` is ``None`` when it did not): exits 1 when its
    answer reported a failure."""
    if failed is None:
        return False
    if failed:
        raise typer.Exit(1)
    return True


def servers(config: ConfigOpt = None, data_dir: DataDirOpt = None, as_json: JsonOpt = False,
            db_url: DbUrlOpt = None) -> None:
    """Show every configured server's status (connected / failed with reason, tool count): the running
    `toolhost serve`'s view when one serves this data folder, else after connecting each one.

    Exits 1 when any server failed to connect."""
    serve_ = _serve(config, data_dir, db_url)
    if serve_ is not None:
        from servers.cli.remote import servers_via_serve

        if _answered(servers_via_serve(serve_, out, err, as_json=as_json)):
            return
    from servers.cli.display import servers_table

    cfg, root = _load(config, data_dir)

    async def body(rt: HostRuntime, _principal: Principal) -> bool:
        if as_json:
            from servers.admin.server_rows import server_row

            rows = [server_row(s) for s in rt.statuses()]  # the admin API's rows, one implementation
            out.print_json(json.dumps(rows))
        else:
            out.print(servers_table(rt.statuses()))
            if cfg.defaults.code_mode.enabled:  # as configured; no serve runs, so nothing runs or waits
                from servers.cli.remote import code_mode_line

                out.print(code_mode_line(cfg.defaults.code_mode.to_config().describe()), highlight=False)
        return any(s.error for s in rt.statuses())

    if _run(_with_runtime, cfg, root, body, False):
        raise typer.Exit(1)


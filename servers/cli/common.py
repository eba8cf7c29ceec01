"""Shared pieces of the ``toolhost`` commands: consoles, option types, loading the config, running
the host for one command (connect every server, run, disconnect), opening the permission store, and
finding a running serve of the data folder (:mod:`servers.cli.serve_client`).

Heavy imports (SDK, SQLAlchemy) happen inside the functions, so `toolhost --help` stays instant.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from servers.cli.admin_common import AsJson, DataDir, DbUrl

if TYPE_CHECKING:
    from host.access import AccessControl
    from host.config import HostConfig
    from host.limits import RateLimiter
    from host.runtime import HostRuntime

__all__ = ["CONFIG_ENV", "ConfigOpt", "DataDirOpt", "DbUrlOpt", "JsonOpt", "UserOpt", "err", "out"]

out = Console()
err = Console(stderr=True)
err.soft_wrap = not err.is_terminal  # a warning or log line piped or captured is never broken at 80 columns

CONFIG_ENV = "TOOLHOST_CONFIG"
"""Environment variable read when ``--config`` is not given (clients that own ``--config``, such as
the MCP Inspector's stdio form, pass it with ``-e TOOLHOST_CONFIG=PATH``)."""

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", exists=True, dir_okay=False, readable=True, envvar=CONFIG_ENV,
                              help="mcpServers JSON config (default: the bundled one).")
]
# The same options as the admin commands (one definition of each).
DataDirOpt = DataDir
JsonOpt = AsJson
DbUrlOpt = DbUrl
UserOpt = Annotated[
    str | None, typer.Option("--user", help="Act as this user: only their grants apply (default: full local access).")
]


def _load(config: Path | None, data_dir: Path | None, output: Any = None) -> tuple[HostConfig, Path]:
    """The config and data folder; a config error exits 2. ``output``: a
    :class:`servers.observability.serve_output.ServeOutput` that writes the error and warnings in
    serve's ``--log-format`` (default: rich lines on stderr)."""
    from host.config import load_config  # lazy imports keep `toolhost --help` instant
    from host.errors import ConfigError
    from host.paths import data_dir as resolve_data_dir

    root = resolve_data_dir(data_dir)
    try:
        cfg = load_config(config, data_dir=root)
    except ConfigError as e:
        if output is not None:
            output.config_error(str(e))
        else:
            err.print(f"[red]config error:[/red] {e}")
        raise typer.Exit(2) from None
    unusable = tuple(f"server {name!r} is not started:" for name in cfg.failed)
    for warning in cfg.warnings:
        if output is not None:
            output.config_warning(warning)
        elif unusable and warning.startswith(unusable):  # an error for that server; the others still start
            err.print(f"[red]config error:[/red] {escape(warning)}", highlight=False)
        else:
            err.print(f"[yellow]config warning:[/yellow] {escape(warning)}", highlight=False)
    return cfg, root


def _run(coro_fn: Any, *args: Any, backend_options: dict[str, Any] | None = None) -> Any:
    import anyio

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
    from host.access import local_policy
    from host.runtime import HostRuntime
    from host.store import StoreError
    from registry import Principal
    from servers.cli.display import live_status
    from servers.cli.local_user import UnknownUser, require_user
    from servers.shared.local_principal import local_principal_name

    access = principal = None
    if user is not None:
        access, _enforce = _open_access(root, "on", db_url, cfg.defaults.definition_scan.learned)
        try:
            require_user(access, user, root)  # type: ignore[arg-type]
            principal = access.principal_for_user(user)  # type: ignore[union-attr]
        except (StoreError, UnknownUser) as e:
            err.print(f"[red]error:[/red] {e}", highlight=False, markup=True)
            access.close()  # type: ignore[union-attr]
            raise typer.Exit(2) from None
    else:
        access, _enforce = _open_access(root, "auto", db_url, cfg.defaults.definition_scan.learned)
    rt = HostRuntime(cfg, data_dir=root, conversation_id="cli", policy=local_policy(access, user=user),
                     approvals=access.approval_hook() if user is not None and access is not None else None,
                     auditor=access,  # every CLI call is audited (principal local:<os user> without --user)
                     limiter=_limiter(access, cfg),
                     prescorer=access.pins.safety if access is not None else None)  # learned scan, off the loop
    try:
        if access is not None:
            access.pins.new_tools = cfg.defaults.new_tools  # held (default) or trusted, as in serve
            access.watch(rt.registry, auto_accept=rt.auto_accepts)
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
    """The config's rate limits over the permission database (:func:`host.limits.rate_limiter_for`)."""
    from host.limits import rate_limiter_for

    return rate_limiter_for(access.store if access is not None else None, cfg.defaults.rate_limits)


def _report_failures(rt: HostRuntime) -> None:
    from servers.cli.display import servers_table

    failed = [s for s in rt.statuses() if s.error]
    if failed:
        err.print(servers_table(failed))



def _open_access(root: Path, mode: str, db_url: str | None, learned_scan: bool) -> tuple[AccessControl | None, bool]:
    from host.access import open_access
    from host.store import StoreError

    try:
        return open_access(root, mode, db_url=db_url, learned_scan=learned_scan)  # type: ignore[arg-type]
    except (ValueError, StoreError) as e:
        err.print(f"[red]{e}[/red]")
        raise typer.Exit(2) from None



def _serve(config: Path | None, data_dir: Path | None, db_url: str | None) -> Any:
    """The running serve of this data folder and store (same config when --config is given), or ``None``."""
    from servers.cli.serve_client import running_serve

    return running_serve(data_dir, db_url=db_url, config=config)


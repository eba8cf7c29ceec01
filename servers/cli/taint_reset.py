"""``toolhost taint reset [--user NAME]``: end the session taint of stateless callers of the
running ``toolhost serve``.

2026-07-28 clients carry no session, so their taint is kept per caller (and, without an API key
and without ``_meta["toolhost/session"]``, shared by every unauthenticated client:
:mod:`servers.gateway.taint_sessions`). This ends those sessions at once instead of waiting for
their idle expiry. Goes through the admin API (``POST /admin/api/taint/reset``, audited
``taint.reset``) with the local admin token of the data folder; without a running serve there is
no taint to reset (exit 2).
"""

from __future__ import annotations

from typing import Annotated

import typer

from servers.cli.admin_common import AsJson, DataDir, print_json

__all__ = ["taint_app"]

taint_app = typer.Typer(help="Session taint of the running `toolhost serve`.", no_args_is_help=True)


@taint_app.command("reset")
def taint_reset(
    user: Annotated[str | None, typer.Option("--user", help="Only this user's stateless sessions "
                                                            "(open access: `local`).")] = None,
    data_dir: DataDir = None,
    as_json: AsJson = False,
) -> None:
    """Forget the session taint of stateless (2026-07-28) callers, e.g. after unrelated clients shared one."""
    from servers.cli.remote import post_to_serve

    answer, _ = post_to_serve(data_dir, "/taint/reset", body={"user": user} if user else {},
                              absent="session taint lives in a running serve (it starts clean)")
    if as_json:
        print_json(answer)
        return
    n = len(answer["reset"])
    typer.echo(f"reset {n} stateless taint session{'s' if n != 1 else ''}" + (f" of user {user}" if user else ""))

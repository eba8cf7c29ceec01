"""Several real ``toolhost serve`` processes for one test module (started at once, all stopped),
and the gateway of one access mode with its users, grants and API keys."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from host.access import AccessControl
from tests.servers.test_access_matrix import Gateway

STARTUP_SECONDS = 100


@asynccontextmanager
async def running(gws: dict[str, Gateway]) -> AsyncIterator[dict[str, Gateway]]:
    """Start every gateway of ``gws`` over HTTP, wait (<= :data:`STARTUP_SECONDS`) until each
    announced its URL, and stop them all (SIGTERM, <= 60 s) on the way out."""
    async with anyio.create_task_group() as tg:
        try:
            for gw in gws.values():
                tg.start_soon(gw.run_http)
            with anyio.fail_after(STARTUP_SECONDS):
                for gw in gws.values():
                    await gw.ready.wait()
            yield gws
        finally:
            with anyio.CancelScope(shield=True), anyio.fail_after(60):
                for gw in gws.values():
                    gw.terminate()
                for gw in gws.values():
                    await gw.wait_stopped()


def gateway_with_users(root: Path, mode: str, grants: Mapping[str, Sequence[str]], *, config: dict[str, Any],
                       args: Sequence[str] = ()) -> Gateway:
    """A ``toolhost serve`` over HTTP (port 0) in ``root/mode``, not started (see :func:`running`):
    ``config`` is written as its config file; each user of ``grants`` is added with an allow grant
    per pattern and one API key (``Gateway.keys[user]``). No users: open access. ``args``: more
    serve arguments (e.g. ``--auth off``)."""
    home = root / mode
    data = home / "data"
    data.mkdir(parents=True)
    (home / "config.json").write_text(json.dumps(config))
    keys: dict[str, str] = {}
    if grants:
        access = AccessControl.open(data)
        try:
            for user, patterns in grants.items():
                access.users.add(user)
                for pattern in patterns:
                    access.grants.add(user, pattern)
                keys[user] = access.keys.create(user)[1]
        finally:
            access.close()
    return Gateway((mode,), home, ["serve", "--config", str(home / "config.json"), "--data-dir", str(data),
                                   "--port", "0", *args], keys=keys)

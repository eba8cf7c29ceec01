"""Several real ``toolhost serve`` processes for one test module (started at once, all stopped)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

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

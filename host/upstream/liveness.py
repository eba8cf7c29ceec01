"""Liveness of a remote (HTTP/SSE) session: a periodic MCP probe with a miss budget.

:func:`probe` sends one MCP ``ping`` on handshake-era sessions; 2026-07-28 removed ``ping``, so
there it sends ``server/discover`` at the negotiated version. :func:`watch_liveness` probes every
``interval`` seconds (each probe bounded by ``min(interval, 10)`` s): a miss reports
``degraded``, ``misses_to_drop`` misses in a row report the session dead, and an answer after a
miss reports it healthy again. (stdio sessions need no probe: a child's exit closes its stdout,
which the transport guard reports at once.)
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from mcp import Client

from host.upstream.forward_call import describe_exception

__all__ = ["MISSES_TO_DROP", "probe", "watch_liveness"]

MISSES_TO_DROP = 2
"""Consecutive missed probes after which the session is dropped and re-established."""


async def probe(client: Client) -> None:
    """One liveness probe (module docstring); raises on any failure."""
    version = client.protocol_version
    if version >= "2026":
        await client.session.send_discover(version)
    else:
        await client.session.send_ping()


async def watch_liveness(
    client: Client,
    interval: float,
    *,
    on_miss: Callable[[str], None],
    on_recovered: Callable[[], None],
    on_dead: Callable[[str], None],
    misses_to_drop: int = MISSES_TO_DROP,
) -> None:
    """Probe forever (until cancelled or dead); see the module docstring for the callbacks."""
    misses = 0
    while True:
        await anyio.sleep(interval)
        try:
            with anyio.fail_after(min(interval, 10.0)):
                await probe(client)
        except Exception as err:  # noqa: BLE001 - any failure counts as a missed probe
            misses += 1
            if misses >= misses_to_drop:
                on_dead(f"{misses} pings in a row failed; reconnecting")
                return
            on_miss(f"ping failed ({describe_exception(err) or 'no answer'})")
            continue
        if misses:
            misses = 0
            on_recovered()

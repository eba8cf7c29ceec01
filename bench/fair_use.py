"""Two users under load: session flooding and rate limits (issue 11, BR-50).

Starts the real streamable-HTTP registry server (API keys, example orders server, temporary data
folder) with ``sessions.max_per_user`` and a per-tool rate limit, then runs at the same time:

* mallory (no grants) opens sessions as fast as she can (``--flood`` initialize requests, 16 in
  flight);
* then bob (while mallory's sessions stay open) opens one legacy session and makes ``--calls``
  calls of ``orders__get_order``;
* alice calls ``orders__get_order`` in a burst past her per-tool limit.

It prints how many of mallory's sessions were accepted/refused (429), bob's successes and latency,
and alice's ``rate_limited`` answers with their ``retry_after_seconds``, for the SDK's manager
alone (``max_sessions`` only, the old behaviour) and toolhost's fair manager, side by side.

    .venv/bin/python bench/fair_use.py [--flood 600] [--calls 60]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from host.access import AccessControl
from host.config import parse_config
from host.limits import RateLimitConfig, RateLimiter, RateRule, SessionLimits
from host.runtime import HostRuntime
from servers.gateway.server import create_registry_server
from servers.http.api_keys import ApiKeyVerifier, auth_settings, principal_resolver
from servers.http.runner import serve_http

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}},
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def run(fair: bool, flood: int, calls: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        access = AccessControl.open(data / "data")
        for u in ("mallory", "bob", "alice"):
            access.users.add(u)
        for u in ("bob", "alice"):
            access.grants.add(u, "orders__get_order")
        keys = {u: access.keys.create(u)[1] for u in ("mallory", "bob", "alice")}
        cfg = parse_config({"mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}},
                           data_dir=data)
        limiter = RateLimiter(access.store, RateLimitConfig(
            users={"alice": RateRule(calls=10, per_seconds=10)}, per_tool=RateRule(calls=1000, per_seconds=1)))
        # old behaviour: one global cap (scaled down from the SDK's 10,000 to --flood / 2)
        limits = SessionLimits(max_per_user=32 if fair else flood, idle_seconds=1800, max_total=flood // 2)
        out: dict[str, object] = {}
        async with HostRuntime(cfg, data_dir=data, policy=access, auditor=access, limiter=limiter) as rt:
            server = create_registry_server(rt, principal_for=principal_resolver(access), access=access)
            stop, ready = anyio.Event(), anyio.Event()
            urls: list[str] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: serve_http(server, port=0, stop=stop, token_verifier=ApiKeyVerifier(access),
                                                 auth=auth_settings("http://127.0.0.1/mcp"),
                                                 on_ready=lambda u: (urls.append(u), ready.set()),
                                                 session_limits=limits))
                await ready.wait()
                url = urls[0]
                statuses: list[int] = []
                flood_done = anyio.Event()

                async def mallory() -> None:
                    sem = anyio.Semaphore(16)
                    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {keys['mallory']}"},
                                                  timeout=60) as http:
                        async def one() -> None:
                            async with sem:
                                async with http.stream("POST", url, json=INIT, headers=HEADERS) as r:
                                    await r.aread()
                                    statuses.append(r.status_code)

                        async with anyio.create_task_group() as g:
                            for _ in range(flood):
                                g.start_soon(one)
                    flood_done.set()

                bob_lat: list[float] = []
                bob_status: list[str] = []

                async def bob() -> None:
                    await flood_done.wait()  # the flood's sessions stay open: the lockout scenario
                    try:
                        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {keys['bob']}"},
                                                      timeout=60) as http, Client(
                            streamable_http_client(url, http_client=http), mode="legacy") as c:
                            for _ in range(calls):
                                t = time.perf_counter()
                                r = await c.call_tool("call_tool", {"name": "orders__get_order",
                                                                    "arguments": {"order_id": "A1001"}})
                                bob_lat.append((time.perf_counter() - t) * 1000)
                                bob_status.append("error" if r.is_error else "ok")
                    except Exception as e:  # noqa: BLE001 - the old behaviour: bob cannot even connect
                        bob_status.append(f"connect failed: {type(e).__name__}")

                alice_retry: list[float] = []
                alice_status: list[str] = []

                async def alice() -> None:
                    for _ in range(15):
                        r = await rt.call("orders__get_order", {"order_id": "A1001"},
                                          access.principal_for_user("alice"))
                        alice_status.append(r.status.value)
                        if r.error and r.error.retry_after_seconds is not None:
                            alice_retry.append(r.error.retry_after_seconds)

                async with anyio.create_task_group() as g:
                    g.start_soon(mallory)
                    g.start_soon(bob)
                    g.start_soon(alice)
                stop.set()
        access.close()
        out.update(
            sessions_ok=statuses.count(200), sessions_429=statuses.count(429), sessions_503=statuses.count(503),
            bob_ok=bob_status.count("ok"), bob_other=[s for s in bob_status if s != "ok"][:1],
            bob_p50=statistics.median(bob_lat) if bob_lat else float("nan"),
            bob_p95=sorted(bob_lat)[int(len(bob_lat) * 0.95) - 1] if bob_lat else float("nan"),
            alice_ok=alice_status.count("ok"), alice_limited=alice_status.count("rate_limited"),
            alice_retry=alice_retry[:3],
        )
        return out


def main() -> None:
    import logging

    logging.getLogger("servers.http.sessions").setLevel(logging.ERROR)
    logging.getLogger("mcp").setLevel(logging.ERROR)
    ap = argparse.ArgumentParser()
    ap.add_argument("--flood", type=int, default=600)
    ap.add_argument("--calls", type=int, default=60)
    args = ap.parse_args()
    rows = [("SDK manager, global cap only", anyio.run(run, False, args.flood, args.calls)),
            ("toolhost fair manager", anyio.run(run, True, args.flood, args.calls))]
    print(f"mallory opens {args.flood} sessions (16 in flight); then bob makes {args.calls} calls; alice bursts 15 calls "
          "(limit 10 per 10 s)")
    print(f"{'manager':30} {'mallory 200/429/503':>20} {'bob ok':>8} {'bob p50 ms':>11} {'bob p95 ms':>11} "
          f"{'alice ok/limited':>17}  alice retry_after (s)")
    for name, r in rows:
        print(f"{name:30} {r['sessions_ok']:>6}/{r['sessions_429']:>4}/{r['sessions_503']:>4}   "
              f"{r['bob_ok']:>4}/{args.calls:<3} {r['bob_p50']:11.1f} {r['bob_p95']:11.1f} "
              f"{r['alice_ok']:>8}/{r['alice_limited']:<8}  {r['alice_retry']} {r['bob_other'] or ''}")


if __name__ == "__main__":
    main()

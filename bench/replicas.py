"""Calls/s and p99 of `toolhost serve` with one replica vs two behind a round-robin, on SQLite vs PostgreSQL.

Run: ``.venv/bin/python bench/replicas.py [--rounds 3] [--calls 300] [--clients 8]``

Setup (all temporary, all stopped at the end): a throwaway PostgreSQL cluster (tests/postgres.py;
``scripts/setup.d/20-postgresql.sh`` installs it), a SQLite file, and per database two real
``toolhost serve`` processes (config: the ``orders`` example server) with permissions on: one
user, one grant, one API key, so every call verifies the key, reads the access revision and
appends an audit row in the shared database. Each contender is reached through its own
loopback round-robin balancer process (:func:`balancer_app`, a few dozen lines over
``httpx2``), one backend for "x1" and two for "x2", so the proxy's cost is the same in every row.

Load: ``--clients`` SDK clients (2026-07-28 requests: stateless, so consecutive requests of one
client land on alternating replicas) calling ``orders__get_order`` through ``call_tool``
``--calls`` times in total per round. Rounds alternate the contenders (noisy shared machine);
the table gives the median calls/s over rounds, the p50/p99 over all calls and the ratio to the
first row.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

ROOT = Path(__file__).resolve().parents[1]
TOOLHOST = str(Path(sys.executable).parent / "toolhost")
HOP_BY_HOP = {b"host", b"content-length", b"connection", b"transfer-encoding", b"keep-alive"}


def balancer_app(backends: list[str]) -> Any:
    """An ASGI app sending each HTTP request to the next of ``backends`` (round-robin), streaming
    the answer back (SSE included). No stickiness: handshake-era sessions need a sticky balancer."""
    client = httpx2.AsyncClient(timeout=None, limits=httpx2.Limits(max_connections=256))
    ring = itertools.cycle(backends)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (msg := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body, more = b"", True
        while more:
            msg = await receive()
            body, more = body + msg.get("body", b""), msg.get("more_body", False)
        query = scope.get("query_string", b"").decode()
        url = next(ring) + scope["path"] + (f"?{query}" if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        resp = await client.send(client.build_request(scope["method"], url, headers=headers, content=body),
                                 stream=True)
        try:
            out = [(k, v) for k, v in resp.headers.raw if k.lower() not in HOP_BY_HOP]
            await send({"type": "http.response.start", "status": resp.status_code, "headers": out})
            async for chunk in resp.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await resp.aclose()

    return app


def run_balancer(backends: list[str]) -> None:
    """``bench/replicas.py --balance URL...``: serve the balancer on a free loopback port, print its URL."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"balancing at http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(uvicorn.Config(balancer_app(backends), log_level="warning", access_log=False)).run(
        sockets=[sock])


def _spawn(cmd: list[str], pattern: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            import threading

            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
            return proc, m.group(1)
    raise RuntimeError(f"{cmd[:3]} did not start:\n" + "".join(seen))


def prepare(url: str) -> str:
    """Migrate ``url``, add user ``bench`` allowed ``orders__get_order``; return their API key."""
    from host.access import AccessControl

    access = AccessControl.open(url=url)
    access.users.add("bench")
    access.grants.add("bench", "orders__get_order")
    _info, key = access.keys.create("bench", "bench")
    access.close()
    return key


async def load(url: str, key: str, calls: int, clients: int) -> tuple[float, list[float]]:
    """``calls`` calls from ``clients`` concurrent SDK clients; (calls/s, latencies in ms)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    lat: list[float] = []
    per = [calls // clients + (1 if i < calls % clients else 0) for i in range(clients)]

    async def worker(n: int) -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
        async with http, Client(streamable_http_client(url, http_client=http)) as c:
            await c.call_tool("call_tool", {"name": "orders__get_order", "arguments": {"order_id": "A1001"}})
            await ready.wait()
            for _ in range(n):
                t = time.perf_counter()
                r = await c.call_tool("call_tool", {"name": "orders__get_order", "arguments": {"order_id": "A1001"}})
                lat.append((time.perf_counter() - t) * 1000)
                assert not r.is_error, r

    ready = anyio.Event()
    async with anyio.create_task_group() as tg:
        for n in per:
            tg.start_soon(worker, n)
        await anyio.sleep(1.0)  # every client connected (warm-up call done)
        t0 = time.perf_counter()
        ready.set()
    return calls / (time.perf_counter() - t0), lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=300, help="calls per contender per round")
    ap.add_argument("--clients", type=int, default=8, help="concurrent SDK clients")
    ap.add_argument("--balance", nargs="+", metavar="URL", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.balance:
        run_balancer(a.balance)
        return

    sys.path.insert(0, str(ROOT))
    from rich.console import Console
    from rich.table import Table

    from tests.postgres import PostgresCluster

    procs: list[subprocess.Popen[str]] = []
    tmp = Path(tempfile.mkdtemp(prefix="toolhost-bench-replicas-"))
    cfg = tmp / "cfg.json"
    cfg.write_text(json.dumps({"mcpServers": {"orders": {"command": sys.executable,
                                                         "args": ["-m", "servers.examples.orders"]}}}))
    with PostgresCluster() as pg:
        try:
            dbs = {"sqlite": f"sqlite:///{tmp / 'toolhost.db'}", "postgresql": pg.create_database("bench")}
            contenders: list[tuple[str, str, str]] = []  # (label, balancer url, key)
            for name, url in dbs.items():
                key = prepare(url)
                env = {**os.environ, "TOOLHOST_DATABASE_URL": url}
                replicas = []
                for i in range(2):
                    p, u = _spawn([TOOLHOST, "serve", "--port", "0", "--config", str(cfg),
                                   "--data-dir", str(tmp / f"{name}-{i}")], r"at (http://\S+)/mcp", env)
                    procs.append(p)
                    replicas.append(u)
                for n in (1, 2):
                    p, u = _spawn([sys.executable, __file__, "--balance", *replicas[:n]], r"at (http://\S+/mcp)")
                    procs.append(p)
                    contenders.append((f"{name} x{n}", u, key))
            rates: dict[str, list[float]] = {c[0]: [] for c in contenders}
            lats: dict[str, list[float]] = {c[0]: [] for c in contenders}
            for rnd in range(a.rounds):
                order = contenders if rnd % 2 == 0 else list(reversed(contenders))
                for label, url, key in order:
                    rate, lat = anyio.run(load, url, key, a.calls, a.clients)
                    rates[label].append(rate)
                    lats[label] += lat
            base = statistics.median(rates[contenders[0][0]])
            table = Table(title=f"toolhost serve replicas: {a.clients} clients, {a.calls} calls x {a.rounds} rounds "
                                f"(orders__get_order, API key + audit row per call, {os.cpu_count()} cores)")
            for col in ("database x replicas", "calls/s (median)", "p50 ms", "p99 ms", "vs first row"):
                table.add_column(col, justify="right" if col != "database x replicas" else "left")
            for label, _u, _k in contenders:
                r = statistics.median(rates[label])
                qs = statistics.quantiles(lats[label], n=100)
                table.add_row(label, f"{r:.0f}", f"{statistics.median(lats[label]):.1f}", f"{qs[98]:.1f}",
                              f"{r / base:.2f}x")
            Console(width=140).print(table)
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

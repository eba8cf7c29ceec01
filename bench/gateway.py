"""Gateway overhead: toolhost vs calling the upstream directly vs FastMCP's proxy, in one run.

Run: ``.venv/bin/python bench/gateway.py [--quick] [--calls 1000] [--rounds 5] [--seconds 10]
[--fastmcp-python PATH|none] [--client-mode auto|legacy]``

Every contender calls the same upstream, ``servers/examples/echo.py`` (one ``async def echo(text)``
tool), with the SDK ``Client``:

* direct stdio / direct HTTP: the client talks to the echo server itself (HTTP: the SDK's default
  streamable HTTP server, SSE, stateful);
* toolhost HTTP ``call_tool`` / ``--expose all`` / toolhost stdio: ``toolhost serve`` (the real
  CLI, a temporary data folder, open access) in front of the echo server over stdio; and HTTP
  ``call_tool`` with a user's API key (grants checked, every call audited);
* FastMCP proxy HTTP / stdio: ``create_proxy`` of FastMCP (``bench/fastmcp_proxy.py``, run by the
  python of a separate venv with fastmcp; default ``/tmp/fastmcp-venv/bin/python``) in front of
  the same echo server over stdio;
* floor proxies HTTP / stdio (``bench/floor_proxy.py``; ``--no-floors`` leaves them out): the SDK's
  low-level server forwarding to the SDK client and nothing else, and a relay without the SDK that
  only moves bytes (stdio) or swaps JSON-RPC ids (HTTP). They are no gateways (no registry, access
  control, audit or limits): they show how close to direct any proxy of that kind can get here.

Tables:

1. sequential: ``--calls`` calls per round, ``--rounds`` rounds, the contenders' order rotated
   every round (so drift on a shared machine hits everyone alike); calls/s is the median over
   rounds, p50/p99 over all calls; ratios against direct HTTP and direct stdio;
2. concurrent: 1/8/32 clients (HTTP: one session each; stdio: that many calls in flight on the
   one session) for ``--seconds`` each, contenders alternated per level; total calls/s, p50/p99,
   errors, ratio against direct on the same transport;
3. the goals of issue 12 with their measured values, and the same ratios for the floor proxies;
4. memory: RSS of an idle ``toolhost serve`` (default config; and one upstream with 10k tools);
5. CLI latency: ``toolhost --help``, ``toolhost search`` with a running serve of the data folder
   (answered by its admin API) and without one (the CLI connects every server itself).

"server CPU ms/call" is the user + system CPU of the process the client talks to (toolhost serve,
the FastMCP or floor proxy, or the echo server for direct), not of its upstream, per call, from
``/proc`` (median of rounds): the number that holds best on a shared machine.

Every process started is stopped (process groups, SIGTERM then SIGKILL), also when the run itself
is stopped with SIGTERM, SIGHUP or Ctrl-C. Numbers are noisy on a
shared machine: read the ratios, which come from alternating rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from processes import child_pids, cpu_seconds, rss_mib, settle, spawned
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import httpx2
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ECHO = [PY, "-m", "servers.examples.echo"]
MANY = [PY, str(ROOT / "bench" / "many_tools_server.py")]
DEFAULT_FASTMCP_PYTHON = "/tmp/fastmcp-venv/bin/python"
ARGS = {"text": "x"}
console = Console(width=160)


def write_config(folder: Path, servers: dict[str, list[str]]) -> Path:
    cfg = {"mcpServers": {name: {"command": cmd[0], "args": cmd[1:]} for name, cmd in servers.items()}}
    path = folder / "config.json"
    path.write_text(json.dumps(cfg))
    return path


def serve_cmd(config: Path, data: Path, *extra: str) -> list[str]:
    return [PY, "-m", "servers.cli.app", "serve", "--config", str(config), "--data-dir", str(data), *extra]


SERVE_ENV = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}


# -- contenders ------------------------------------------------------------------------------
@dataclass
class Contender:
    key: str
    label: str
    transport: str  # "http" | "stdio"
    target: Any  # URL or StdioServerParameters
    tool: str
    args: dict[str, Any]
    lat: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    errors: int = 0
    conc: dict[int, tuple[float, float, float, int, float]] = field(default_factory=dict)  # rate, p50, p99, errors, CPU
    token: str | None = None
    pid: int | None = None  # the server process the client talks to (HTTP: known at start; stdio: found on connect)
    cpu: list[float] = field(default_factory=list)  # that process's CPU seconds per call, one entry per round

    @contextlib.asynccontextmanager
    async def client(self, mode: str) -> AsyncIterator[Client]:
        if self.transport == "http" and self.token:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}) as http:
                async with Client(streamable_http_client(self.target, http_client=http), mode=mode) as c:
                    yield c
        elif self.transport == "http":
            async with Client(self.target, mode=mode) as c:
                yield c
        else:
            with open(os.devnull, "w") as errlog:
                before = set(child_pids())
                async with Client(stdio_client(self.target, errlog=errlog), mode=mode) as c:
                    new = [pid for pid in child_pids() if pid not in before]
                    if len(new) == 1:
                        self.pid = new[0]
                    yield c


async def _one(c: Client, who: Contender) -> float:
    t = time.perf_counter()
    r = await c.call_tool(who.tool, who.args)
    dt = time.perf_counter() - t
    if r.is_error or not r.content or getattr(r.content[0], "text", None) != "x":
        raise RuntimeError(f"{who.label}: unexpected result {r!r}")
    return dt


async def sequential(who: Contender, c: Client, n: int) -> None:
    lat = []
    cpu0 = cpu_seconds(who.pid)
    t0 = time.perf_counter()
    for _ in range(n):
        try:
            lat.append(await _one(c, who))
        except Exception:  # noqa: BLE001 - counted, shown in the table
            who.errors += 1
    who.rates.append(n / (time.perf_counter() - t0))
    who.cpu.append((cpu_seconds(who.pid) - cpu0) / n)
    who.lat.extend(lat)


async def concurrent(who: Contender, clients: list[Client], k: int, seconds: float) -> None:
    lat: list[float] = []
    errors = 0
    stop_at = time.perf_counter() + seconds

    async def worker(c: Client) -> None:
        nonlocal errors
        while time.perf_counter() < stop_at:
            try:
                lat.append(await _one(c, who))
            except Exception:  # noqa: BLE001
                errors += 1

    cpu0 = cpu_seconds(who.pid)
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(k):
            tg.start_soon(worker, clients[i % len(clients)])
    total = time.perf_counter() - t0
    cpu = (cpu_seconds(who.pid) - cpu0) / max(1, len(lat))
    lat.sort()
    who.conc[k] = (len(lat) / total, pct(lat, 50), pct(lat, 99), errors, cpu)


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] * 1000


@contextlib.asynccontextmanager
async def sessions(who: Contender, k: int, mode: str) -> AsyncIterator[list[Client]]:
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(who.client(mode)) for _ in range(k)]
        for c in clients:  # warm up every session
            for _ in range(5):
                await _one(c, who)
        await settle(who.pid)  # a serve --stdio just started may still be indexing: not in the timed window
        yield clients


# -- main ---------------------------------------------------------------------------------
async def run_calls(contenders: list[Contender], args: argparse.Namespace) -> None:
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for who in contenders:
            clients[who.key] = (await stack.enter_async_context(sessions(who, 1, args.client_mode)))[0]
            for _ in range(args.warmup):
                await _one(clients[who.key], who)
        for rnd in range(args.rounds):
            order = contenders[rnd % len(contenders):] + contenders[: rnd % len(contenders)]
            for who in order:
                await sequential(who, clients[who.key], args.calls)
            console.print(f"  sequential round {rnd + 1}/{args.rounds} done", style="dim")
    for k in args.levels:
        for who in contenders:
            n_sessions = k if who.transport == "http" else 1
            async with sessions(who, n_sessions, args.client_mode) as cs:
                await concurrent(who, cs, k, args.seconds)
        console.print(f"  {k} concurrent clients done", style="dim")


def tables(contenders: list[Contender], args: argparse.Namespace) -> None:
    by = {c.key: c for c in contenders}
    dh, ds = by.get("direct-http"), by.get("direct-stdio")
    fh, fs = by.get("fastmcp-http"), by.get("fastmcp-stdio")
    t = Table(title=f"Sequential: {args.calls} calls x {args.rounds} alternating rounds (calls/s = median of rounds)")
    for col in ("path", "calls/s", "p50 ms", "p99 ms", "vs direct HTTP", "vs direct same transport",
                "vs FastMCP same transport", "server CPU ms/call", "errors"):
        t.add_column(col, justify="right" if col != "path" else "left")
    for c in contenders:
        rate = statistics.median(c.rates)
        same = dh if c.transport == "http" else ds
        fm = fh if c.transport == "http" else fs
        t.add_row(
            c.label, f"{rate:.0f}", f"{pct(c.lat, 50):.2f}", f"{pct(c.lat, 99):.2f}",
            f"{rate / statistics.median(dh.rates):.2f}" if dh else "-",
            f"{rate / statistics.median(same.rates):.2f}" if same else "-",
            f"{rate / statistics.median(fm.rates):.2f}" if fm and not c.key.startswith(("direct", "fastmcp")) else "-",
            f"{statistics.median(c.cpu) * 1000:.2f}" if c.cpu else "-",
            str(c.errors),
        )
    console.print(t)
    for k in args.levels:
        t = Table(title=f"{k} concurrent client(s), {args.seconds:g} s (HTTP: one session per client; "
                        "stdio: calls in flight on one session)")
        for col in ("path", "calls/s", "p50 ms", "p99 ms", "vs direct same transport", "p99 vs direct",
                    "vs FastMCP same transport", "server CPU ms/call", "errors"):
            t.add_column(col, justify="right" if col != "path" else "left")
        for c in contenders:
            rate, p50, p99, err, cpu = c.conc[k]
            same = dh if c.transport == "http" else ds
            fm = fh if c.transport == "http" else fs
            t.add_row(c.label, f"{rate:.0f}", f"{p50:.1f}", f"{p99:.1f}",
                      f"{rate / same.conc[k][0]:.2f}" if same else "-",
                      f"{p99 / same.conc[k][2]:.2f}" if same else "-",
                      f"{rate / fm.conc[k][0]:.2f}" if fm and not c.key.startswith(("direct", "fastmcp")) else "-",
                      f"{cpu * 1000:.2f}", str(err))
        console.print(t)
    goals(contenders, args)


def goals(contenders: list[Contender], args: argparse.Namespace) -> None:
    """The issue's goals, each with the measured value."""
    by = {c.key: c for c in contenders}
    rows: list[tuple[str, str, bool]] = []

    def seq(key: str) -> float:
        return statistics.median(by[key].rates)

    for key, base, want in (("toolhost-http", "direct-http", 0.85), ("toolhost-http-all", "direct-http", 0.85),
                            ("toolhost-stdio", "direct-stdio", 0.85)):
        if key in by and base in by:
            r = seq(key) / seq(base)
            rows.append((f"sequential {by[key].label} >= {want}x {base}", f"{r:.2f}x", r >= want))
    for key, fm in (("toolhost-http", "fastmcp-http"), ("toolhost-stdio", "fastmcp-stdio")):
        if key in by and fm in by:
            r = seq(key) / seq(fm)
            rows.append((f"sequential {by[key].label} >= 1.5x FastMCP", f"{r:.2f}x", r >= 1.5))
            for k in args.levels:
                r = by[key].conc[k][0] / by[fm].conc[k][0]
                rows.append((f"{k} clients {by[key].label} >= 1.5x FastMCP", f"{r:.2f}x", r >= 1.5))
    top = max(args.levels)
    for key, base in (("toolhost-http", "direct-http"), ("toolhost-http-all", "direct-http")):
        if key in by and base in by:
            r = by[key].conc[top][0] / by[base].conc[top][0]
            rows.append((f"{top} clients {by[key].label} >= 0.8x direct", f"{r:.2f}x", r >= 0.8))
            p = by[key].conc[top][2] / by[base].conc[top][2]
            rows.append((f"{top} clients {by[key].label} p99 <= 2x direct's", f"{p:.2f}x", p <= 2.0))
    errors = sum(c.errors + sum(v[3] for v in c.conc.values()) for c in contenders)
    rows.append(("no errors at any level", str(errors), errors == 0))
    t = Table(title="Goals of issue 12")
    for col in ("goal", "measured", "met"):
        t.add_column(col)
    for goal, value, ok in rows:
        t.add_row(goal, value, "yes" if ok else "NO")
    console.print(t)
    floors(by, top)


def floors(by: dict[str, Contender], top: int) -> None:
    """What the floor proxies (bench/floor_proxy.py) say a goal can reach: each goal's ratio for the floor."""
    t = Table(title="The same ratios for the floor proxies (the most any gateway of that kind can reach here)")
    for col in ("transport", "contender", "seq vs direct", f"{top} clients vs direct", "seq vs FastMCP",
                f"{top} clients vs FastMCP", "server CPU ms/call seq"):
        t.add_column(col, justify="left" if col in ("transport", "contender") else "right")
    for transport in ("http", "stdio"):
        base, fm = by.get(f"direct-{transport}"), by.get(f"fastmcp-{transport}")
        for key in (f"toolhost-{transport}", f"floor-sdk-{transport}", f"floor-raw-{transport}"):
            c = by.get(key)
            if c is None:
                continue
            rate = statistics.median(c.rates)
            t.add_row(transport, c.label,
                      f"{rate / statistics.median(base.rates):.2f}" if base else "-",
                      f"{c.conc[top][0] / base.conc[top][0]:.2f}" if base and top in c.conc else "-",
                      f"{rate / statistics.median(fm.rates):.2f}" if fm else "-",
                      f"{c.conc[top][0] / fm.conc[top][0]:.2f}" if fm and top in c.conc else "-",
                      f"{statistics.median(c.cpu) * 1000:.2f}" if c.cpu else "-")
    if t.rows:
        console.print(t)


def memory_and_cli(tmp: Path, args: argparse.Namespace) -> None:
    t = Table(title="toolhost serve memory and CLI latency")
    t.add_column("what")
    t.add_column("value", justify="right")

    def timed(cmd: list[str], runs: int) -> float:
        out = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, env=SERVE_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True, timeout=120)
            out.append(time.perf_counter() - t0)
        return statistics.median(out)

    runs = 1 if args.quick else 3
    default_data = tmp / "default-data"
    search = [PY, "-m", "servers.cli.app", "search", "time", "--data-dir", str(default_data)]
    with spawned([PY, "-m", "servers.cli.app", "serve", "--port", "0", "--data-dir", str(default_data)],
                 env=SERVE_ENV, pattern=r"serving (\d+) tools", stream="stderr", timeout=120) as (proc, n):
        time.sleep(1.0)
        t.add_row(f"serve RSS idle, default config ({n} tools; serve process only)", f"{rss_mib(proc.pid):.0f} MiB")
        with_serve = timed(search, runs)
    many_dir = tmp / "many"
    many_dir.mkdir()
    cfg = write_config(many_dir, {"many": [*MANY, "--tools", str(args.many_tools)]})
    with spawned(serve_cmd(cfg, many_dir / "data", "--port", "0"), env=SERVE_ENV, pattern=r"serving (\d+) tools",
                 stream="stderr", timeout=300) as (proc, n):
        time.sleep(1.0)
        t.add_row(f"serve RSS idle, {n} tools from one upstream", f"{rss_mib(proc.pid):.0f} MiB")

    t.add_row("`toolhost --help` (median)", f"{timed([PY, '-m', 'servers.cli.app', '--help'], runs):.2f} s")
    t.add_row("`toolhost search time --data-dir D` without a running serve (connects every server)",
              f"{timed(search, runs):.2f} s")
    t.add_row("`toolhost search time --data-dir D` with a running serve of D (asks its admin API)",
              f"{with_serve:.2f} s")
    console.print(t)


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    """SIGTERM/SIGHUP end the run like Ctrl-C: the ExitStack stops every server this run started."""
    raise SystemExit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    signal.signal(signal.SIGHUP, _exit_on_sigterm)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="200 calls x 3 rounds, 3 s per level, levels 1/8")
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--levels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8, 32])
    p.add_argument("--only", default="", help="comma-separated contender keys (default: all)")
    p.add_argument("--fastmcp-python", default=DEFAULT_FASTMCP_PYTHON, help="python with fastmcp, or 'none'")
    p.add_argument("--client-mode", default="auto", help="SDK Client mode: auto (2026-07-28 first) or legacy")
    p.add_argument("--many-tools", type=int, default=10_000)
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--no-floors", action="store_true", help="leave out the floor proxies (bench/floor_proxy.py)")
    p.add_argument("--alt", action="append", default=[], metavar="ENV=VAL,...",
                   help="an extra toolhost contender served with these environment variables (A/B of settings); "
                   "prefix 'stdio:' for a stdio one")
    p.add_argument("--baseline-tree", default="", metavar="PATH",
                   help="another checkout (e.g. `git archive main | tar -x -C PATH`): extra toolhost stdio and HTTP "
                   "contenders (baseline-stdio, baseline-http) run from it with this venv, for a same-run before/after")
    args = p.parse_args()
    if args.quick:
        args.calls, args.rounds, args.seconds, args.levels, args.warmup = 200, 3, 3.0, [1, 8], 20
    tmp = Path(tempfile.mkdtemp(prefix="toolhost-gateway-bench-"))
    try:
        run(tmp, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # configs and data folders of every serve this run started


def run(tmp: Path, args: argparse.Namespace) -> None:
    cfg = write_config(tmp, {"echo": ECHO})
    fm_py = args.fastmcp_python if args.fastmcp_python != "none" and Path(args.fastmcp_python).exists() else None
    with contextlib.ExitStack() as stack:

        def start(cmd: list[str], **kw: Any) -> tuple[int, str]:
            proc, url = stack.enter_context(spawned(cmd, **kw))
            return proc.pid, url

        direct_pid, direct_url = start([*ECHO, "--http"])
        serve_pid, serve_url = start(serve_cmd(cfg, tmp / "d1", "--port", "0"), env=SERVE_ENV, stream="stderr")
        all_pid, all_url = start(serve_cmd(cfg, tmp / "d2", "--port", "0", "--expose", "all"), env=SERVE_ENV,
                                 stream="stderr")
        via = {"name": "echo__echo", "arguments": ARGS}
        contenders = [
            Contender("direct-stdio", "SDK client → echo over stdio (direct)", "stdio",
                      StdioServerParameters(command=ECHO[0], args=ECHO[1:], cwd=str(ROOT)), "echo", ARGS),
            Contender("direct-http", "SDK client → echo over streamable HTTP (direct)", "http", direct_url, "echo",
                      ARGS, pid=direct_pid),
            Contender("toolhost-http", "toolhost over HTTP, call_tool", "http", serve_url, "call_tool", via,
                      pid=serve_pid),
            Contender("toolhost-http-all", "toolhost over HTTP, --expose all", "http", all_url, "echo__echo", ARGS,
                      pid=all_pid),
            Contender("toolhost-stdio", "toolhost over stdio, call_tool", "stdio",
                      StdioServerParameters(command=PY, args=serve_cmd(cfg, tmp / "d3", "--stdio")[1:],
                                            cwd=str(ROOT), env=SERVE_ENV), "call_tool", via),
        ]
        for i, alt in enumerate(args.alt):
            transport, _, settings = alt.rpartition(":") if alt.startswith(("stdio:", "http:")) else ("http", "", alt)
            env = dict(SERVE_ENV, **dict(kv.split("=", 1) for kv in settings.split(",")))
            if transport == "stdio":
                contenders.append(Contender(f"alt{i}", f"toolhost over stdio, call_tool, {settings}", "stdio",
                                            StdioServerParameters(command=PY, args=serve_cmd(
                                                cfg, tmp / f"alt{i}", "--stdio")[1:], cwd=str(ROOT), env=env),
                                            "call_tool", via))
                continue
            pid, url = start(serve_cmd(cfg, tmp / f"alt{i}", "--port", "0"), env=env, stream="stderr")
            contenders.append(Contender(f"alt{i}", f"toolhost over HTTP, call_tool, {settings}", "http", url,
                                        "call_tool", via, pid=pid))
        if args.baseline_tree:
            tree = str(Path(args.baseline_tree).resolve())
            contenders.append(Contender("baseline-stdio", f"toolhost over stdio, call_tool ({tree})", "stdio",
                                        StdioServerParameters(command=PY, args=serve_cmd(cfg, tmp / "base", "--stdio")[1:],
                                                              cwd=tree, env=SERVE_ENV), "call_tool", via))
            base_pid, base_url = start(serve_cmd(cfg, tmp / "base-http", "--port", "0"), env=SERVE_ENV,
                                       stream="stderr", cwd=Path(tree))
            contenders.append(Contender("baseline-http", f"toolhost over HTTP, call_tool ({tree})", "http", base_url,
                                        "call_tool", via, pid=base_pid))
        if not args.only or "toolhost-http-key" in args.only:
            data = tmp / "d4"
            for cmd in (["users", "add", "bench"], ["grants", "add", "bench", "echo__*"]):
                subprocess.run([PY, "-m", "servers.cli.app", *cmd, "--data-dir", str(data)], cwd=ROOT, check=True,
                               stdout=subprocess.DEVNULL, env=SERVE_ENV)
            out = subprocess.run([PY, "-m", "servers.cli.app", "keys", "create", "bench", "--data-dir", str(data)],
                                 cwd=ROOT, check=True, capture_output=True, text=True, env=SERVE_ENV).stdout
            token = re.search(r"(th_\w+_\S+)", out).group(1)
            key_pid, key_url = start(serve_cmd(cfg, data, "--port", "0"), env=SERVE_ENV, stream="stderr")
            contenders.append(Contender("toolhost-http-key", "toolhost over HTTP, call_tool, API key + audit",
                                        "http", key_url, "call_tool", via, token=token, pid=key_pid))
        if not args.no_floors:
            floor = [PY, str(ROOT / "bench" / "floor_proxy.py")]
            for kind, what in (("sdk", "SDK Server + Client, nothing else"), ("raw", "no SDK, bytes and ids only")):
                pid, url = start([*floor, "--kind", kind, "--http", "--", *ECHO])
                contenders += [
                    Contender(f"floor-{kind}-http", f"floor proxy over HTTP ({what})", "http", url, "echo", ARGS,
                              pid=pid),
                    Contender(f"floor-{kind}-stdio", f"floor proxy over stdio ({what})", "stdio",
                              StdioServerParameters(command=PY, args=[*floor[1:], "--kind", kind, "--stdio", "--",
                                                                      *ECHO], cwd=str(ROOT)), "echo", ARGS),
                ]
        if fm_py:
            fm_pid, fm_url = start([fm_py, str(ROOT / "bench" / "fastmcp_proxy.py"), "--http", "--", *ECHO],
                                   timeout=120)
            contenders += [
                Contender("fastmcp-http", "FastMCP proxy over HTTP", "http", fm_url, "echo", ARGS, pid=fm_pid),
                Contender("fastmcp-stdio", "FastMCP proxy over stdio", "stdio",
                          StdioServerParameters(command=fm_py, args=[str(ROOT / "bench" / "fastmcp_proxy.py"),
                                                                     "--stdio", "--", *ECHO], cwd=str(ROOT)),
                          "echo", ARGS),
            ]
        else:
            console.print(f"FastMCP skipped: no python at {args.fastmcp_python!r} (python3 -m venv "
                          "/tmp/fastmcp-venv && /tmp/fastmcp-venv/bin/pip install fastmcp)", style="yellow")
        if args.only:
            keep = set(args.only.split(","))
            contenders = [c for c in contenders if c.key in keep]
        console.print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
                      f"client mode {args.client_mode}", style="dim")
        anyio.run(run_calls, contenders, args)
    tables(contenders, args)
    if not args.skip_memory:
        memory_and_cli(tmp, args)
    console.print(f"load average after: {os.getloadavg()[0]:.1f}", style="dim")


if __name__ == "__main__":
    main()

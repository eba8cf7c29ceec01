"""What the parent-death launcher (host/upstream/pdeath.py) costs a stdio server, in one run.

Run: ``.venv/bin/python bench/stdio_launcher.py [--rounds 10]``

Contenders, alternating every round (order flipped each round): a stdio server started directly
(``command args``, as before) and under the launcher (``python -I -S pdeath.py <pid> -- command
args``, as now). Measured per start:

* ``connect ms``: spawn + MCP initialize + ``tools/list`` through the SDK's ``stdio_client`` for
  the orders example server (what a server's connect time includes), median over rounds;
* ``exit ms``: a trivial command (``true``) from spawn to exit status, median over rounds;
* ``launcher RSS MiB``: the resident memory of one idle launcher process (the cost per stdio server).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from host.upstream.pdeath import wrap

PY = sys.executable


def command(launcher: bool, cmd: str, args: list[str]) -> tuple[str, list[str]]:
    return wrap(cmd, args) if launcher else (cmd, args)


async def connect_ms(launcher: bool) -> float:
    cmd, args = command(launcher, PY, ["-m", "servers.examples.orders"])
    start = time.perf_counter()
    with anyio.fail_after(60):
        async with stdio_client(StdioServerParameters(command=cmd, args=args)) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            return (time.perf_counter() - start) * 1000


def exit_ms(launcher: bool) -> float:
    cmd, args = command(launcher, "true", [])
    start = time.perf_counter()
    subprocess.run([cmd, *args], check=True, timeout=60)
    return (time.perf_counter() - start) * 1000


def launcher_rss_mib() -> float:
    cmd, args = wrap("sleep", ["30"])
    proc = subprocess.Popen([cmd, *args], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the launcher has started its child (its RSS is final)
            kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            if kids:
                break
            time.sleep(0.01)
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    times: dict[tuple[str, bool], list[float]] = {
        (k, wrapped): [] for k in ("connect", "exit") for wrapped in (False, True)
    }
    for i in range(rounds):
        for launcher in (False, True) if i % 2 == 0 else (True, False):
            times[("connect", launcher)].append(anyio.run(connect_ms, launcher))
            times[("exit", launcher)].append(exit_ms(launcher))
    table = Table(title=f"stdio server start, direct vs under the launcher (median of {rounds} rounds)")
    for col in ("measure", "direct", "launcher", "ratio"):
        table.add_column(col, justify="right")
    for kind in ("connect", "exit"):
        direct, wrapped = statistics.median(times[(kind, False)]), statistics.median(times[(kind, True)])
        table.add_row(f"{kind} ms", f"{direct:.1f}", f"{wrapped:.1f}", f"{wrapped / direct:.2f}")
    table.add_row("launcher RSS MiB", "-", f"{launcher_rss_mib():.1f}", "-")
    Console().print(table)


if __name__ == "__main__":
    main()

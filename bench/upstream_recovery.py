"""How fast toolhost notices an upstream's death and serves it again, per kind of upstream.

For each contender, in alternating rounds, the upstream process is SIGKILLed while idle and then
brought back; the script records

* **detect**: SIGKILL → the server's tools are marked unavailable (state leaves ``connected``);
* **return → serving**: the upstream is able to serve again (stdio: toolhost's respawn starts;
  HTTP: the process is restarted on its port) → ``connected`` with its tools re-listed;
* **death → serving**: SIGKILL → ``connected`` again (detection + backoff + reconnect).

Contenders: the hand-written stdio fake (no SDK import: fast start), an SDK ``MCPServer`` stdio
server (``servers.examples.orders``; ~1 s Python import), and the streamable-HTTP fake (found dead
by ``ping`` every ``--ping`` seconds). Backoff starts at 1 s (the default), as in production.

Run::

    .venv/bin/python bench/upstream_recovery.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host.config import parse_config  # noqa: E402 - after sys.path gets the repo root
from host.upstream.manager import ServerManager  # noqa: E402 - same
from host.upstream.status import AVAILABLE_STATES, ConnectionState, ServerStatus  # noqa: E402 - same

FAKES = ROOT / "tests" / "upstream" / "fakes"


class Timeline:
    def __init__(self) -> None:
        self.events: list[tuple[float, str, ConnectionState]] = []
        self._event = anyio.Event()

    def __call__(self, status: ServerStatus) -> None:
        self.events.append((time.perf_counter(), status.name, status.state))
        self._event.set()
        self._event = anyio.Event()

    async def first(self, name: str, after: float, pred, timeout: float = 60) -> float:
        with anyio.fail_after(timeout):
            while True:
                for t, n, s in self.events:
                    if n == name and t >= after and pred(s):
                        return t
                await self._event.wait()


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


async def _stdio_round(m: ServerManager, tl: Timeline, name: str, pid_of) -> tuple[float, float, float]:
    pid = pid_of()
    t_kill = time.perf_counter()
    os.kill(pid, signal.SIGKILL)
    t_down = await tl.first(name, t_kill, lambda s: s not in AVAILABLE_STATES)
    t_start = await tl.first(name, t_down, lambda s: s is ConnectionState.CONNECTING)
    t_up = await tl.first(name, t_start, lambda s: s is ConnectionState.CONNECTED)
    return t_down - t_kill, t_up - t_start, t_up - t_kill


def _start_http(port: int | None) -> tuple[subprocess.Popen, int]:
    args = [sys.executable, str(FAKES / "http_fake.py")] + ([str(port)] if port else [])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("LISTENING "), line
    return proc, int(line.split()[1])


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ping", type=float, default=1.0, help="ping interval of the HTTP contender (s)")
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="toolhost-bench-recovery-"))
    http, port = _start_http(None)
    fake_pids = tmp / "fake.pids"
    cfg = parse_config({
        "toolhost": {"connect_timeout_seconds": 20, "healthy_after_seconds": 0.5, "ping_interval_seconds": opts.ping},
        "mcpServers": {
            "fake": {"command": sys.executable,
                     "args": [str(FAKES / "hostile_stdio.py"), json.dumps({"starts_file": str(fake_pids)})]},
            "sdk": {"command": sys.executable, "args": ["-m", "servers.examples.orders"], "cwd": str(ROOT)},
            "http": {"url": f"http://127.0.0.1:{port}/mcp"},
        },
    })
    tl = Timeline()
    rows: dict[str, list[tuple[float, float, float]]] = {"fake": [], "sdk": [], "http": []}
    try:
        async with ServerManager(cfg, data_dir=tmp / "data", reconnect=True, on_status=tl) as m:
            for conn in m.connections.values():
                assert conn.status.state is ConnectionState.CONNECTED, (conn.name, conn.status.error)

            def children(ppid: int, marker: bytes) -> list[int]:
                out = []
                for entry in Path("/proc").iterdir():
                    if not entry.name.isdigit():
                        continue
                    try:
                        parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                        cmd = (entry / "cmdline").read_bytes()
                    except (OSError, IndexError, ValueError):
                        continue
                    if parent == ppid and marker in cmd:
                        out.append(int(entry.name))
                return out

            def sdk_pid() -> int:
                """The pid of *our* orders server: the child of the parent-death launcher this process
                started (host/upstream/pdeath.py). Killing the launcher instead would leave the server
                holding the pipe open, so its death would never show."""
                for launcher in children(os.getpid(), b"servers.examples.orders"):
                    servers = children(launcher, b"servers.examples.orders")
                    if servers:
                        return servers[0]
                raise RuntimeError("the orders server started by this process is not running")

            for _ in range(opts.rounds):
                for name in ("fake", "sdk", "http"):
                    await anyio.sleep(0.6)  # past healthy_after_seconds: every round starts from a fresh backoff
                    if name == "fake":
                        rows[name].append(await _stdio_round(m, tl, name, lambda: _pids(fake_pids)[-1]))
                    elif name == "sdk":
                        rows[name].append(await _stdio_round(m, tl, name, sdk_pid))
                    else:
                        t_kill = time.perf_counter()
                        http.send_signal(signal.SIGKILL)
                        http.wait()
                        t_down = await tl.first(name, t_kill, lambda s: s not in AVAILABLE_STATES)
                        http, _ = _start_http(port)
                        t_back = time.perf_counter()
                        t_up = await tl.first(name, t_back, lambda s: s is ConnectionState.CONNECTED)
                        rows[name].append((t_down - t_kill, t_up - t_back, t_up - t_kill))
    finally:
        http.kill()
        http.wait()
    labels = {"fake": "stdio, hand-written fake", "sdk": "stdio, SDK MCPServer (orders)",
              "http": f"streamable HTTP, ping {opts.ping:g} s"}
    print(f"\nUpstream death → unavailable → serving again ({opts.rounds} alternating rounds; ms, p50 / max)\n")
    head = f"{'contender':<34} {'detect':>16} {'return → serving':>20} {'death → serving':>20}"
    print(head)
    print("-" * len(head))
    for name, data in rows.items():
        cols = []
        for i in range(3):
            vals = [r[i] * 1000 for r in data]
            cols.append(f"{statistics.median(vals):8.1f} / {max(vals):7.1f}")
        print(f"{labels[name]:<34} {cols[0]:>16} {cols[1]:>20} {cols[2]:>20}")
    base = statistics.median(r[0] for r in rows["fake"])
    print(f"\ndetect ratio vs the stdio fake: sdk {statistics.median(r[0] for r in rows['sdk']) / base:.1f}x, "
          f"http {statistics.median(r[0] for r in rows['http']) / base:.0f}x (ping-bound)")


if __name__ == "__main__":
    anyio.run(main)

"""CLI latency with and without a running ``toolhost serve`` on the same data folder, in one run.

Run: ``.venv/bin/python bench/cli.py [--rounds 5]``

A temporary data folder with one user, and a config of two example servers (``orders``,
``rug``; stdio). One ``toolhost serve --port 0`` runs on it for the whole bench. Each command
runs as a fresh process, alternately through the serve (the default: the CLI finds the serve by
``serve.json`` and asks its admin API) and on its own (``TOOLHOST_NO_SERVE=1``: it opens the
database and, for ``servers``/``tools``/``search``/``call``, connects every server itself), the
order flipped every round so drift on a shared machine hits both alike. Wall time per process
(startup, imports and all); median over rounds; ratio = alone / through the serve.

The serve and every process it started are stopped at the end (SIGTERM to its process group).
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
from pathlib import Path

from rich.console import Console
from rich.table import Table

PY = sys.executable
TOOLHOST = str(Path(PY).parent / "toolhost")

COMMANDS: list[tuple[str, list[str]]] = [
    ("--help", ["--help"]),
    ("servers", ["servers"]),
    ("tools", ["tools"]),
    ("search", ["search", "cancel an order"]),
    ("call", ["call", "orders__get_order", '{"order_id": "A1001"}']),
    ("users list", ["users", "list"]),
    ("audit -n 5", ["audit", "-n", "5"]),
]


def run(args: list[str], data: Path, alone: bool) -> float:
    env = {**os.environ, "COLUMNS": "200"}
    if alone:
        env["TOOLHOST_NO_SERVE"] = "1"
    extra = [] if args == ["--help"] else ["--data-dir", str(data)]
    started = time.perf_counter()
    p = subprocess.run([TOOLHOST, *args, *extra], capture_output=True, text=True, env=env, timeout=300)
    took = time.perf_counter() - started
    if p.returncode != 0:
        raise SystemExit(f"toolhost {' '.join(args)} failed ({p.returncode}): {p.stderr[-500:]}")
    return took


def start_serve(cfg: Path, data: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([TOOLHOST, "serve", "--port", "0", "--config", str(cfg), "--data-dir", str(data)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, start_new_session=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # bounded: serve prints the URL once the servers are connected, or exits
        m = re.search(r"at (http://\S+)/mcp", line)
        if m:
            return proc, m.group(1)
    raise SystemExit("toolhost serve exited before serving")


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolhost-bench-cli-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        cfg = Path(tmp) / "cfg.json"
        cfg.write_text(json.dumps({"mcpServers": {
            "orders": {"command": PY, "args": ["-m", "servers.examples.orders"]},
            "rug": {"command": PY, "args": ["-m", "servers.examples.rugpull"]},
        }}))
        subprocess.run([TOOLHOST, "users", "add", "alice", "--data-dir", str(data)], check=True,
                       capture_output=True, timeout=120)
        proc, _url = start_serve(cfg, data)
        times: dict[tuple[str, bool], list[float]] = {}
        try:
            for r in range(opts.rounds):
                for label, args in COMMANDS:
                    for alone in ((False, True) if r % 2 == 0 else (True, False)):
                        # without the serve, the command needs the config to know the servers
                        cmd = args + (["--config", str(cfg)] if alone and label in
                                      ("servers", "tools", "search", "call") else [])
                        times.setdefault((label, alone), []).append(run(cmd, data, alone))
                print(f"round {r + 1}/{opts.rounds} done", file=sys.stderr)
        finally:
            stop(proc)
    table = Table(title=f"toolhost CLI wall time per command (s), median of {opts.rounds} alternating rounds")
    for col in ("command", "through the running serve", "alone (TOOLHOST_NO_SERVE=1)", "alone / serve"):
        table.add_column(col, justify="right" if col != "command" else "left")
    for label, _args in COMMANDS:
        via = statistics.median(times[(label, False)])
        alone = statistics.median(times[(label, True)])
        table.add_row(label, f"{via:.2f}", f"{alone:.2f}", f"{alone / via:.1f}×")
    Console().print(table)
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()

"""Disk and memory ceilings of ``toolhost serve`` under a flooding upstream.

One ``serve`` (HTTP, open access, temporary data folder) in front of ``tests/upstream/flooding_upstream.py``,
which writes ``--mib`` MiB of stderr as fast as it can, then a client has it send ``--notifications``
log notifications in one call. Prints serve's RSS (before, peak while flooding) and the size of
every file under ``logs/``; the caps are the config's defaults (10 MiB per file, 2 backups, 50
notifications/s) unless ``--max-mib`` is given.

    .venv/bin/python bench/log_flood.py --mib 200 --notifications 20000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.processes import ROOT, rss_mib, spawned, stop_process

FLOODER = ROOT / "tests" / "upstream" / "flooding_upstream.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=float, default=200.0)
    ap.add_argument("--notifications", type=int, default=20000)
    ap.add_argument("--max-mib", type=float, default=None)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolhost-logflood-") as tmp:
        root = Path(tmp)
        block = {} if ns.max_mib is None else {"log_max_mib": ns.max_mib}
        cfg = root / "config.json"
        cfg.write_text(json.dumps({"toolhost": block, "mcpServers": {
            "flood": {"command": sys.executable, "args": [str(FLOODER), str(ns.mib)]}}}))
        cmd = [str(Path(sys.executable).parent / "toolhost"), "serve", "--port", "0", "--config", str(cfg),
               "--data-dir", str(root / "home")]
        with spawned(cmd, stream="stderr", pattern=r"at (http://\S+/mcp)", timeout=120) as (proc, url):
            peak, stop = [rss_mib(proc.pid)], threading.Event()

            def sample() -> None:
                while not stop.wait(0.05):
                    try:
                        peak.append(rss_mib(proc.pid))
                    except OSError:
                        return

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            logs = root / "home" / "logs"
            started = time.monotonic()
            while not any("FLOOD DONE" in p.read_text(errors="replace")[-200:] for p in logs.glob("flood.stderr.log")):
                time.sleep(0.1)
            flood_s = time.monotonic() - started

            async def notify() -> None:
                with anyio.fail_after(300):
                    async with Client(streamable_http_client(url)) as c:
                        await c.call_tool("call_tool", {"name": "flood__notify",
                                                        "arguments": {"count": ns.notifications}})

            anyio.run(notify)
            stop.set()
            sampler.join()
            sizes = {p.name: p.stat().st_size for p in sorted(logs.iterdir())}
            stop_process(proc)
    print("| stderr flooded | notifications | flood s | serve RSS start MiB | serve RSS peak MiB |")
    print(f"| {ns.mib:g} MiB | {ns.notifications} | {flood_s:.1f} | {peak[0]:.0f} | {max(peak):.0f} |")
    print()
    print("| file under logs/ | bytes |")
    for name, size in sizes.items():
        print(f"| {name} | {size} |")
    print(f"| total | {sum(sizes.values())} |")


if __name__ == "__main__":
    main()

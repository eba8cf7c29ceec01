"""Disk and memory ceilings of ``toolhost serve`` under a flooding upstream.

One ``serve`` (HTTP, open access, temporary data folder) starts with a quiet server (the flooder
with 0 MiB) and waits until tool search is ready - serve's log says the tool vectors are in
(``tool_search: N tool vectors ...``) or that search is BM25 only - so the dense model's load and
first embedding are not counted as the flood's. Then the config gains ``tests/upstream/flooding_upstream.py``
(reloaded with SIGHUP), which writes ``--mib`` MiB of stderr as fast as it can, and a client has it
send ``--notifications`` log notifications in one call. Prints serve's RSS (at its URL, once search
is ready, peak while flooding; the flood's share is peak minus ready) and the size of every file
under ``logs/``; the caps are the config's defaults (10 MiB per file, 2 backups, 50 notifications/s)
unless ``--max-mib`` is given.

    .venv/bin/python bench/log_flood.py --mib 200 --notifications 20000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.processes import ROOT, rss_mib, stop_process

FLOODER = ROOT / "tests" / "upstream" / "flooding_upstream.py"
SEARCH_READY = re.compile(r"tool_search: \d+ tool vectors|BM25 only")
"""Serve's log line once tool search is ready: vectors in, or no dense model (BM25 only)."""


class ServeLog:
    """Reads serve's stderr on a thread; ``url`` and ``search_ready`` are set when their line comes."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.url = ""
        self.url_seen, self.search_ready, self.ended = threading.Event(), threading.Event(), threading.Event()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line)
            if not self.url_seen.is_set() and (m := re.search(r"at (http://\S+/mcp)", line)):
                self.url = m.group(1)
                self.url_seen.set()
            if SEARCH_READY.search(line):
                self.search_ready.set()
        self.ended.set()

    def wait(self, event: threading.Event, what: str, timeout: float) -> None:
        if not event.wait(timeout):
            raise RuntimeError(f"serve did not report {what} within {timeout:g} s:\n{''.join(self.lines[-40:])}")


def _config(cfg: Path, mib: float, max_mib: float | None, *, flood: bool) -> None:
    block = {} if max_mib is None else {"log_max_mib": max_mib}
    servers = {"quiet": {"command": sys.executable, "args": [str(FLOODER), "0"]}}
    if flood:
        servers["flood"] = {"command": sys.executable, "args": [str(FLOODER), str(mib)]}
    cfg.write_text(json.dumps({"toolhost": block, "mcpServers": servers}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=float, default=200.0)
    ap.add_argument("--notifications", type=int, default=20000)
    ap.add_argument("--max-mib", type=float, default=None)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolhost-logflood-") as tmp:
        root = Path(tmp)
        cfg = root / "config.json"
        _config(cfg, ns.mib, ns.max_mib, flood=False)
        cmd = [str(Path(sys.executable).parent / "toolhost"), "serve", "--port", "0", "--config", str(cfg),
               "--data-dir", str(root / "home")]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, start_new_session=True, env={**os.environ, "COLUMNS": "300"})
        try:
            log = ServeLog(proc)
            log.wait(log.url_seen, "its URL", 120)
            at_url = rss_mib(proc.pid)
            log.wait(log.search_ready, "tool search ready", 300)
            ready = rss_mib(proc.pid)
            peak, stop = [ready], threading.Event()

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
            _config(cfg, ns.mib, ns.max_mib, flood=True)
            os.kill(proc.pid, signal.SIGHUP)  # serve reloads its config: the flooder starts
            while not any("FLOOD DONE" in p.read_text(errors="replace")[-200:] for p in logs.glob("flood.stderr.log")):
                if proc.poll() is not None:
                    raise RuntimeError("serve exited during the flood:\n" + "".join(log.lines[-40:]))
                time.sleep(0.1)  # the flooder's own file: nothing to await but its last line
            flood_s = time.monotonic() - started

            async def notify() -> None:
                with anyio.fail_after(300):
                    async with Client(streamable_http_client(log.url)) as c:
                        await c.call_tool("call_tool", {"name": "flood__notify",
                                                        "arguments": {"count": ns.notifications}})

            anyio.run(notify)
            stop.set()
            sampler.join()
            sizes = {p.name: p.stat().st_size for p in sorted(logs.iterdir())}
        finally:
            stop_process(proc)
    print("| stderr flooded | notifications | flood s | serve RSS at URL MiB | RSS search ready MiB "
          "| RSS peak MiB | flood's share MiB |")
    print(f"| {ns.mib:g} MiB | {ns.notifications} | {flood_s:.1f} | {at_url:.0f} | {ready:.0f} | {max(peak):.0f} "
          f"| {max(peak) - ready:.0f} |")
    print()
    print("| file under logs/ | bytes |")
    for name, size in sizes.items():
        print(f"| {name} | {size} |")
    print(f"| total | {sum(sizes.values())} |")


if __name__ == "__main__":
    main()

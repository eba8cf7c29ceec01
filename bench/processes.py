"""Processes of the gateway benchmark (``bench/gateway.py``): start one and wait for its ready line,
stop a process group, and read a process's RSS and CPU time from Linux ``/proc``."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

__all__ = ["child_pids", "cpu_seconds", "rss_mib", "settle", "spawned", "stop_process"]

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def spawned(cmd: list[str], *, env: dict[str, str] | None = None, pattern: str = r"(http://\S+/mcp)",
            stream: str = "stdout", timeout: float = 60.0, cwd: Path = ROOT) -> Iterator[tuple[subprocess.Popen, str]]:
    """Start ``cmd`` in its own process group, wait for ``pattern`` on ``stream``; yield (proc, match)."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if stream == "stdout" else log,
        stderr=subprocess.PIPE if stream == "stderr" else log, cwd=cwd, env=env, start_new_session=True,
        text=True, bufsize=1,
    )
    try:
        pipe = proc.stdout if stream == "stdout" else proc.stderr
        assert pipe is not None
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            line = pipe.readline()
            if not line:
                break
            seen += line
            m = re.search(pattern, line)
            if m:
                break
        else:
            m = None
        if not m:
            raise RuntimeError(f"{cmd!r} did not print {pattern!r}: {seen[-2000:]}")
        # keep draining the pipe so the child never blocks on a full pipe
        drain = threading.Thread(target=lambda: [None for _ in pipe], daemon=True)
        drain.start()
        yield proc, m.group(1)
    finally:
        stop_process(proc)
        log.close()


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child_pids() -> list[int]:
    """Pids of this process's direct children (Linux ``/proc``)."""
    me, out = os.getpid(), []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                    out.append(int(d.name))
    return out


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of one process (not its children); NaN when unknown."""
    if pid is None:
        return float("nan")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def settle(pid: int | None, *, quiet: float = 0.3, limit: float = 15.0) -> None:
    """Wait (at most ``limit`` s) until process ``pid`` used under 5% of a CPU for ``quiet`` s."""
    deadline = time.perf_counter() + limit
    while pid is not None and time.perf_counter() < deadline:
        before = cpu_seconds(pid)
        await anyio.sleep(quiet)
        if not cpu_seconds(pid) - before > 0.05 * quiet:  # NaN (gone) ends the wait too
            return

"""A real ``toolhost serve`` child process for tests: started with ``--port 0``, its URL read
from its output, stopped (SIGTERM to its process group, then waited) on exit."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TOOLHOST = str(Path(sys.executable).parent / "toolhost")


@contextmanager
def serve_http(cfg: Path, data: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen, list[str]]]:
    """``toolhost serve --port 0 --config CFG --data-dir DATA EXTRA...``; yields (``…/mcp`` URL,
    process, its output lines: those up to the URL's, then the rest as they come).

    Raises:
        AssertionError: the process exited before announcing its URL (its output is in the message).
    """
    proc = subprocess.Popen(
        [TOOLHOST, "serve", "--port", "0", "--config", str(cfg), "--data-dir", str(data), *extra],
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert proc.stderr is not None
    seen: list[str] = []
    try:
        for line in proc.stderr:  # bounded: the process prints the URL or exits
            seen.append(line)
            m = re.search(r"at (http://\S+/mcp)", line)
            if m:
                break
        else:
            raise AssertionError("toolhost serve did not start:\n" + "".join(seen))
        # keep reading, so a chatty serve never blocks on a full pipe; later lines join ``seen``
        threading.Thread(target=lambda: seen.extend(proc.stderr or ()), daemon=True).start()
        yield m.group(1), proc, seen
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

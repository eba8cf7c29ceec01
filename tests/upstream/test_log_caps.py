"""Bounded logs: a flooding upstream (stderr flood + notification flood) keeps every file under
``logs/`` within its cap (rotated, ``log_backups`` kept), ``tail()`` reads from the end, and
logged notifications are rate limited with the number dropped noted."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest

from host.calls import ResultStatus
from host.config import parse_config
from host.runtime import HostRuntime
from host.upstream.serverlog import TAIL_BYTES, LogLimits, RotatingFile, ServerLog
from registry import AllowAll

FLOODER = Path(__file__).with_name("flooding_upstream.py")
CAP = 256 * 1024
FLOOD_MIB = 16


def _sizes(logs: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(logs.iterdir())}


@pytest.mark.anyio
async def test_a_flooding_server_stays_under_the_caps(tmp_path: Path) -> None:
    cfg = parse_config({
        "toolhost": {"log_max_mib": CAP / (1024 * 1024), "log_backups": 1, "log_notifications_per_second": 20},
        "mcpServers": {"flood": {"command": sys.executable, "args": [str(FLOODER), str(FLOOD_MIB)]}},
    }, data_dir=tmp_path)
    logs = tmp_path / "logs"
    with anyio.fail_after(120):
        async with HostRuntime(cfg, data_dir=tmp_path, policy=AllowAll()) as rt:
            stderr_log = logs / "flood.stderr.log"
            conn = rt.manager.connections["flood"]
            while "FLOOD DONE" not in conn.log.tail(3):  # the whole flood went through the pipe
                await anyio.sleep(0.05)
            tail = conn.log.tail(2)
            started = time.monotonic()
            sent = await rt.call("flood__notify", {"count": 3000})
            assert sent.status is ResultStatus.OK
            total = 3000
            notes = logs / "flood.log"
            while "log notifications dropped" not in notes.read_text():  # noted with the next logged one
                assert (await rt.call("flood__notify", {"count": 1})).status is ResultStatus.OK
                total += 1
            elapsed = time.monotonic() - started
            sizes = _sizes(logs)
    assert stderr_log.name in sizes and f"{stderr_log.name}.1" in sizes and f"{stderr_log.name}.2" not in sizes
    assert all(size <= CAP for size in sizes.values()), sizes  # 16 MiB of stderr: at most 2 x 256 KiB on disk
    assert sum(sizes.values()) <= 3 * CAP
    assert tail.splitlines()[-1] == "FLOOD DONE" and len(tail.splitlines()) == 2
    lines = notes.read_text().splitlines()
    kept = [ln for ln in lines if " notification " in ln]
    dropped = [int(ln.split("toolhost: ")[1].split()[0]) for ln in lines if "log notifications dropped" in ln]
    # the 10 s burst (200) plus what 20/s refilled while it ran; every dropped one is counted
    assert 200 <= len(kept) <= 200 + 20 * elapsed + 1
    assert 1 <= len(dropped) <= elapsed + 1  # one note a second at most
    assert len(kept) + sum(dropped) <= total  # the last second's drops are noted with the next line
    print(f"flood {FLOOD_MIB} MiB stderr + 3000 notifications -> logs/ {sizes}")


def test_rotation_keeps_backups_and_a_huge_write_keeps_its_end(tmp_path: Path) -> None:
    f = RotatingFile(tmp_path / "x.log", LogLimits(max_bytes=100, backups=2))
    for i in range(10):
        f.write(f"{i:02d}".encode() * 20)  # 40 bytes each
    f.write(b"A" * 150 + b"END")
    f.close()
    assert _sizes(tmp_path) == {"x.log": 100, "x.log.1": 80, "x.log.2": 80}
    assert (tmp_path / "x.log").read_bytes().endswith(b"END")


def test_tail_reads_only_the_end_of_a_large_file(tmp_path: Path) -> None:
    log = ServerLog(tmp_path / "s.stderr.log", LogLimits(max_bytes=64 * 1024 * 1024))
    log.open("starting x")
    for i in range(200_000):
        log.write_bytes(f"line {i}\n".encode())
    log.write("toolhost: a note")
    log.close()
    assert (tmp_path / "s.stderr.log").stat().st_size > 10 * TAIL_BYTES
    assert log.tail(3) == "line 199997\nline 199998\nline 199999"

"""The code-mode gateway benchmark stays runnable: over its real upstreams (the orders example,
server-filesystem on 30 temp files, mcp-server-git on a temp repository) every task's direct steps
and its script run through a real ``toolhost serve --code-mode``, and the token table has a row per
task with the script cheaper than the direct transcript; a missing FastMCP venv is named with the
command that makes it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
TITLES = [
    "orders: cancel every paid order",
    "orders: spend per customer",
    "orders: 10 order lookups",
    "files: which of 30 files mention TODO, with counts",
    "git: files and added lines of the last 12 commits",
]


def test_the_token_table_has_every_task_and_a_missing_fastmcp_venv_says_how_to_make_it(tmp_path):
    missing = tmp_path / "no-venv" / "bin" / "python"
    out = subprocess.run([sys.executable, str(BENCH / "code_mode_gateway.py"), "--rounds", "1", "--measures", "tokens",
                          "--fastmcp-python", str(missing)],
                         capture_output=True, text=True, timeout=300, check=False, env={"COLUMNS": "250",
                                                                                         "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-3000:]
    flat = " ".join(out.stdout.split())
    assert (f"FastMCP left out: no python at '{missing}'; make its venv with: python3.11 -m venv "
            "/tmp/fastmcp-cm-venv && /tmp/fastmcp-cm-venv/bin/pip install 'fastmcp[code-mode]'") in flat
    calls = {}
    for title in TITLES:
        row = next(line for line in out.stdout.splitlines() if title in line)
        cells = [c.strip() for c in row.split("│")[1:-1]]
        assert cells[0] == title
        calls[title] = int(cells[1])
        direct, script, ratio = int(cells[2]), int(cells[3]), float(cells[4].rstrip("x"))
        assert direct > script > 0
        assert ratio == round(direct / script, 1)
    # the direct steps really ran: one call per order / file / commit
    assert calls == {TITLES[0]: 3, TITLES[1]: 6, TITLES[2]: 10, TITLES[3]: 31, TITLES[4]: 13}
    assert re.search(r"load average before: [\d.]+ [\d.]+ [\d.]+ on \d+ CPUs", out.stdout)


def test_an_unknown_measure_is_refused_with_the_ones_there_are():
    out = subprocess.run([sys.executable, str(BENCH / "code_mode_gateway.py"), "--measures", "tokens,speed"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2
    assert "--measures: unknown speed; pick from tokens,latency,hostile" in out.stderr

"""`toolhost serve` answers at once while a slow or hanging upstream starts: /healthz, /readyz with the
per-server body, `initialize` over HTTP and stdio; listings wait at most `startup_wait_seconds`, and a
server that connects later announces its tools with `notifications/tools/list_changed`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.servers.conftest import PY

TOOLHOST = str(Path(sys.executable).parent / "toolhost")

HANGING = {"command": PY, "args": ["-c", "import time; print('warming up the cache...', flush=True); time.sleep(600)"]}
"""A stdio server that prints a non-MCP line and never answers (a stalled `npx -y` install)."""

LATE_ORDERS = {"command": "sh", "args": ["-c", f"sleep 4; exec {PY} -m servers.examples.orders"]}
"""The orders example, starting 4 s late."""


def _config(tmp_path: Path, servers: dict, wait: float) -> Path:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"toolhost": {"startup_wait_seconds": wait, "first_connect_timeout_seconds": 300},
                                "mcpServers": servers}))
    return path


class _Serve:
    """`toolhost serve --port 0` with stderr read line by line; the time of each line since start."""

    def __init__(self, tmp_path: Path, config: Path, *args: str) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen([TOOLHOST, "serve", "--port", "0", "--config", str(config),
                                      "--data-dir", str(tmp_path / "d"), *args],
                                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                     env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "TOOLHOST_DENSE_SEARCH": "0"})
        self.lines: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._cond:
                self.lines.append((time.monotonic() - self.started, line))
                self._cond.notify_all()
        with self._cond:
            self.lines.append((time.monotonic() - self.started, "<exit>"))
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float) -> tuple[float, re.Match[str]]:
        rx = re.compile(pattern)
        found: list[tuple[float, re.Match[str]]] = []

        def match() -> bool:
            for at, line in self.lines:
                m = rx.search(line)
                if m:
                    found.append((at, m))
                    return True
            return any(line == "<exit>" for _at, line in self.lines)

        with self._cond:
            self._cond.wait_for(match, timeout)
        assert found, f"serve never printed {pattern!r}: {''.join(line for _at, line in self.lines)}"
        return found[0]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def hanging_serve(tmp_path):
    serve = _Serve(tmp_path, _config(tmp_path, {"stuck": HANGING}, wait=2))
    try:
        yield serve
    finally:
        serve.stop()


def test_http_answers_health_readiness_and_initialize_while_a_server_hangs(hanging_serve):
    at, m = hanging_serve.wait_for(r"listening on (http://\S+)/mcp", 60)
    base = m.group(1)
    assert at < 30  # before the hanging server's first attempt could end (300 s)
    health = httpx.get(f"{base}/healthz", timeout=10)
    ready = httpx.get(f"{base}/readyz", timeout=10)
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert ready.status_code == 503
    assert [(s["name"], s["state"]) for s in ready.json()["servers"]] == [("stuck", "connecting")]

    async def mcp() -> tuple[str, list[str], float]:
        with anyio.fail_after(30):
            async with Client(f"{base}/mcp", mode="legacy") as c:
                t0 = time.monotonic()
                tools = [t.name for t in (await c.list_tools()).tools]  # waits at most startup_wait_seconds (2)
                return c.server_info.name, tools, time.monotonic() - t0

    name, tools, waited = anyio.run(mcp)
    assert (name, tools) == ("toolhost", ["tool_search", "call_tool"])
    assert waited < 10
    assert all("serving" not in line for _at, line in hanging_serve.lines)  # the ready banner waits for the first round


@pytest.mark.anyio
async def test_stdio_initializes_and_lists_while_a_server_hangs(tmp_path):
    params = StdioServerParameters(command=TOOLHOST, args=[
        "serve", "--stdio", "--config", str(_config(tmp_path, {"stuck": HANGING}, wait=2)),
        "--data-dir", str(tmp_path / "d")], env={"PATH": "/usr/bin:/bin", "TOOLHOST_DENSE_SEARCH": "0"})
    started = time.monotonic()
    with anyio.fail_after(45):
        async with Client(params, mode="legacy") as c:
            initialized = time.monotonic() - started
            tools = [t.name for t in (await c.list_tools()).tools]
    assert tools == ["tool_search", "call_tool"]
    assert initialized < 30


def test_a_late_server_announces_its_tools_with_list_changed(tmp_path):
    serve = _Serve(tmp_path, _config(tmp_path, {"orders": LATE_ORDERS}, wait=0.5), "--expose", "all")
    try:
        _at, m = serve.wait_for(r"listening on (http://\S+)/mcp", 60)
        url = m.group(1) + "/mcp"

        async def session() -> tuple[list[str], list[str]]:
            changed = anyio.Event()

            async def on_message(message) -> None:
                if type(message).__name__ == "ToolListChangedNotification":
                    changed.set()

            with anyio.fail_after(60):
                async with Client(url, mode="legacy", message_handler=on_message) as c:
                    before = [t.name for t in (await c.list_tools()).tools]
                    await changed.wait()
                    after = [t.name for t in (await c.list_tools()).tools]
                    return before, after

        before, after = anyio.run(session)
        assert before == []
        assert after == ["orders__cancel_order", "orders__get_order", "orders__list_orders"]
        serve.wait_for(r"toolhost serving 3 tools at http://", 30)  # the ready banner once the first round ended
    finally:
        serve.stop()

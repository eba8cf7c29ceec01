"""A real ``toolhost serve`` process for admin/console tests, and the people it serves."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from host.access import AccessControl

PY = sys.executable
TOOLHOST = str(Path(sys.executable).parent / "toolhost")


def config(tmp_path: Path, **extra: Any) -> Path:
    servers = {
        "orders": {"command": PY, "args": ["-m", "servers.examples.orders"]},
        "rug": {"command": PY, "args": ["-m", "servers.examples.rugpull"]},
    } | extra
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": servers}))
    return path


def people(data_dir: Path) -> dict[str, str]:
    """``root`` (role admin), ``alice`` (orders__* and the rug server); returns their API keys."""
    a = AccessControl.open(data_dir)
    try:
        a.users.add("root")
        a.roles.add("admin", "operators")
        a.users.assign_role("root", "admin")
        a.users.add("alice")
        a.grants.add("alice", "orders__*")
        a.grants.add("alice", "server:rug")
        return {"root": a.keys.create("root")[1], "alice": a.keys.create("alice")[1]}
    finally:
        a.close()


class Serve:
    """``toolhost serve --port 0`` on ``data_dir`` with ``config``; stderr collected line by line.

    Use as a context manager: entering waits (<= 90 s) for the announced URL; leaving sends SIGTERM
    and waits for a clean exit (kills after 30 s)."""

    def __init__(self, config_path: Path, data_dir: Path, *args: str) -> None:
        self.args = [TOOLHOST, "serve", "--port", "0", "--config", str(config_path), "--data-dir", str(data_dir),
                     *args]
        self.data_dir = data_dir
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> Serve:
        self.proc = subprocess.Popen(self.args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                     env={**os.environ, "COLUMNS": "200"})
        threading.Thread(target=self._read, daemon=True).start()
        try:
            m = self.wait_for(r"at (http://\S+)/mcp", 90)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.url = m.group(1)
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self.lines.append("<exit>")
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float = 30, start: int = 0) -> re.Match[str]:
        """The first stderr line from index ``start`` matching ``pattern`` (waits up to ``timeout`` s)."""
        rx = re.compile(pattern)
        found: list[re.Match[str]] = []

        def match() -> bool:
            for line in self.lines[start:]:
                m = rx.search(line)
                if m:
                    found.append(m)
                    return True
            return "<exit>" in self.lines

        with self._cond:
            self._cond.wait_for(match, timeout)
        if not found:
            raise AssertionError(f"serve never printed {pattern!r}; stderr:\n{''.join(self.lines)}")
        return found[0]

    @property
    def token(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()

    def api(self, key: str | None = None) -> httpx2.Client:
        headers = {"Authorization": f"Bearer {key or self.token}"}
        return httpx2.Client(base_url=self.url + "/admin/api", headers=headers, timeout=30)

    def __exit__(self, *exc: Any) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@asynccontextmanager
async def mcp_client(url: str, token: str):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http, \
            Client(streamable_http_client(url + "/mcp", http_client=http)) as c:
        yield c

"""Several real ``toolhost serve`` processes on one PostgreSQL database, for the replica tests.

    cluster = Cluster(postgres_url, tmp_path)       # users, keys, grants through the real admin CLI
    a, b = cluster.start(2)                          # two replicas, each on a free loopback port
    result = await call(a.url, key, "orders__get_order", {"order_id": "A1001"})

Each replica has its own data folder (event log, spill files are per replica) and shares only the
database. Every process started here is stopped by :meth:`Cluster.stop` (the ``cluster`` fixture
does that), SIGTERM first, SIGKILL after 30 s.

To cover new shared state (quotas, rate limits, usage memory, the audit chain), add a test next
to tests/replicas/test_replicas.py that takes ``cluster``, starts two replicas and checks that what
one replica writes, the other enforces on its next request.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from servers.cli.app import app

__all__ = ["FLAKY", "ORDERS", "Cluster", "Replica", "admin_cli", "call", "error_code"]

TOOLHOST = str(Path(sys.executable).parent / "toolhost")
PY = sys.executable
_runner = CliRunner()
ORDERS = {"command": PY, "args": ["-m", "servers.examples.orders"]}
FLAKY = {"command": PY, "args": ["-m", "servers.examples.flaky"]}


def admin_cli(db_url: str, *args: str) -> str:
    """Run one admin command in-process (``--db-url db_url``); returns stdout, asserts exit 0."""
    result = _runner.invoke(app, [*args, "--db-url", db_url])
    assert result.exit_code == 0, (args, result.stdout, result.stderr if result.stderr_bytes else "")
    return result.stdout


class Replica:
    """One ``toolhost serve`` process. Attributes: proc, url (``http://127.0.0.1:PORT/mcp``), stderr lines."""

    def __init__(self, proc: subprocess.Popen[str], url: str, lines: list[str]) -> None:
        self.proc = proc
        self.url = url
        self.lines = lines

    def kill(self) -> None:
        """SIGKILL (a crash: no graceful shutdown, no cleanup) and reap it."""
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


class Cluster:
    """Replicas of one configuration on one database (see the module docstring).

    Args:
        db_url: the shared database (PostgreSQL in the tests).
        root: a temporary folder for the config and each replica's data folder.
        servers: the ``mcpServers`` of the config (default: the ``orders`` example alone; ``FLAKY``
            adds a slow tool).
    """

    def __init__(
        self, db_url: str, root: Path, servers: dict[str, Any] | None = None, toolhost: dict[str, Any] | None = None
    ) -> None:
        self.db_url = db_url
        self.root = root
        self.config = root / "replicas.json"
        self.config.write_text(json.dumps({"mcpServers": servers or {"orders": ORDERS}, "toolhost": toolhost or {}}))
        self.replicas: list[Replica] = []

    def admin(self, *args: str) -> str:
        """An admin command on the shared database (in-process typer runner)."""
        return admin_cli(self.db_url, *args)

    def new_key(self, user: str) -> str:
        return re.search(r"(th_\w+_\S+)", self.admin("keys", "create", user)).group(1)  # type: ignore[union-attr]

    def start(self, n: int = 1, *extra: str) -> list[Replica]:
        """Start ``n`` replicas at the same moment (they migrate concurrently) and wait until all serve."""
        env = {**os.environ, "TOOLHOST_DATABASE_URL": self.db_url}
        procs = []
        for _ in range(n):
            data = self.root / f"replica-{len(self.replicas) + len(procs)}"
            procs.append(subprocess.Popen(
                [TOOLHOST, "serve", "--port", "0", "--config", str(self.config), "--data-dir", str(data), *extra],
                stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True, env=env,
            ))
        started = []
        for proc in procs:
            lines: list[str] = []
            url = None
            assert proc.stderr is not None
            for line in proc.stderr:  # bounded: the process prints the URL or exits
                lines.append(line)
                m = re.search(r"at (http://\S+/mcp)", line)
                if m:
                    url = m.group(1)
                    break
            if url is None:
                for p in procs:
                    p.kill()
                    p.wait()
                raise AssertionError("toolhost serve did not start:\n" + "".join(lines))
            threading.Thread(target=_drain, args=(proc, lines), daemon=True).start()
            replica = Replica(proc, url, lines)
            started.append(replica)
        self.replicas += started
        return started

    def stop(self) -> None:
        for r in self.replicas:
            r.stop()


def _drain(proc: subprocess.Popen[str], lines: list[str]) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)


async def call(url: str, key: str, tool: str, args: dict[str, Any] | None = None) -> Any:
    """One MCP client session (protocol negotiated by the SDK) doing one ``call_tool`` on ``url``."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
    async with http, Client(streamable_http_client(url, http_client=http)) as c:
        return await c.call_tool("call_tool", {"name": tool, "arguments": args or {}})


def error_code(result: Any) -> str | None:
    """The toolhost error code of a call result (``None`` for a success)."""
    if not result.is_error:
        return None
    return (result.meta or {}).get("toolhost/error", {}).get("code")

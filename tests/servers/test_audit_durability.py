"""No answered call loses its audit row: `toolhost serve` stopped mid-load by SIGTERM (orderly
shutdown flushes the write-behind) or killed by SIGKILL (commit durability: a call is answered only
after its row is committed). Each call echoes a unique text, so every answer is matched to its row."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from host.store import AuditLog, Store
from servers.cli.app import app

runner = CliRunner()
WORKERS = 4
SIGNAL_AFTER = 60
"""Answered calls before the signal is sent."""


def admin(data: Path, *args: str) -> str:
    result = runner.invoke(app, [*args, "--data-dir", str(data)])
    assert result.exit_code == 0, result.stdout
    return result.stdout


def setup(tmp_path: Path, toolhost_block: dict) -> tuple[Path, Path, str]:
    data = tmp_path / "home"
    admin(data, "users", "add", "alice")
    admin(data, "grants", "add", "alice", "echo__*")
    key = re.search(r"(th_\w+_\S+)", admin(data, "keys", "create", "alice")).group(1)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"toolhost": toolhost_block, "mcpServers": {
        "echo": {"command": sys.executable, "args": ["-m", "servers.examples.echo"]}}}))
    return data, cfg, key


async def load_until_signal(url: str, key: str, proc: subprocess.Popen, sig: int) -> set[str]:
    """Calls from WORKERS clients; after SIGNAL_AFTER answers, ``sig`` goes to the serve process group.
    Returns the texts of every answered call."""
    answered: set[str] = set()
    sent = anyio.Event()

    async def worker(w: int) -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
        try:
            async with http, Client(streamable_http_client(url, http_client=http)) as c:
                for i in range(100_000):
                    text = f"w{w}-{i}"
                    r = await c.call_tool("call_tool", {"name": "echo__echo", "arguments": {"text": text}})
                    assert not r.is_error, r
                    assert r.content[0].text == text
                    answered.add(text)
                    if len(answered) >= SIGNAL_AFTER and not sent.is_set():
                        sent.set()
                        os.killpg(proc.pid, sig)
        except Exception:  # noqa: BLE001 - the server went away under us: that is the point
            return

    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            for w in range(WORKERS):
                tg.start_soon(worker, w)
    assert sent.is_set(), f"only {len(answered)} calls were answered before the clients failed"
    return answered


def audited_texts(data: Path) -> list[str]:
    store = Store.open(data_dir=data)
    try:
        rows = AuditLog(store).query(action="call", limit=100_000)
    finally:
        store.close()
    return [json.loads(r.arguments)["text"] for r in rows if r.status == "ok"]


def serve(data: Path, cfg: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "servers.cli", "serve", "--port", "0", "--config", str(cfg), "--data-dir", str(data)],
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True,
        env={**os.environ, "COLUMNS": "300"},
    )
    for line in proc.stderr:
        m = re.search(r"at (http://\S+/mcp)", line)
        if m:
            return proc, m.group(1)
    proc.wait(10)
    raise AssertionError("serve did not start")


def stop_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the serve process and its echo child
    except ProcessLookupError:
        pass
    proc.wait(30)


@pytest.mark.anyio
async def test_sigterm_mid_load_flushes_every_answered_calls_row(tmp_path):
    """interval durability with a 30 s window: nothing is committed by the timer before SIGTERM, so
    every row comes from the shutdown flush."""
    data, cfg, key = setup(tmp_path, {"audit_durability": "interval", "audit_flush_seconds": 30})
    proc, url = serve(data, cfg)
    try:
        answered = await load_until_signal(url, key, proc, signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        stop_group(proc)
    audited = audited_texts(data)
    assert len(audited) == len(set(audited))  # one row per call
    assert answered <= set(audited), sorted(answered - set(audited))[:5]
    # The only rows without an answer are of calls the server finished as the clients' connections closed.
    assert len(set(audited) - answered) <= WORKERS


@pytest.mark.anyio
async def test_sigkill_mid_load_keeps_every_answered_calls_row(tmp_path):
    """commit durability (the default): no shutdown code runs, yet every answered call has its row."""
    data, cfg, key = setup(tmp_path, {})
    proc, url = serve(data, cfg)
    try:
        answered = await load_until_signal(url, key, proc, signal.SIGKILL)
    finally:
        stop_group(proc)
    audited = audited_texts(data)
    assert len(audited) == len(set(audited))
    assert answered <= set(audited), sorted(answered - set(audited))[:5]
    assert len(set(audited) - answered) <= WORKERS


@pytest.mark.anyio
async def test_a_2026_call_over_http_writes_one_call_row_and_runs_no_listing(tmp_path):
    """The SDK checks Mcp-Param headers of 2026-07-28 calls against the tool's input schema; the
    registry server answers that lookup itself, so no tools/list handler (and no `list` audit row)
    runs per call."""
    data, cfg, key = setup(tmp_path, {})
    proc, url = serve(data, cfg)
    try:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
        with anyio.fail_after(60):
            async with http, Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as c:
                for i in range(3):
                    r = await c.call_tool("call_tool", {"name": "echo__echo", "arguments": {"text": f"t{i}"}})
                    assert r.content[0].text == f"t{i}"
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        stop_group(proc)
    store = Store.open(data_dir=data)
    try:
        rows = AuditLog(store).query(limit=100)
    finally:
        store.close()
    # 3 calls, and the one listing the SDK client itself makes (to learn output schemas) - not one per call
    assert sorted((r.action, r.status) for r in rows if r.action in ("call", "list")) == [("call", "ok")] * 3 + [
        ("list", "ok")]

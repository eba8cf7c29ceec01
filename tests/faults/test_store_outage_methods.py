"""Every MCP method during a permission-store outage (PostgreSQL stopped under ``toolhost serve``)
answers one clear error - JSON-RPC ``-32603`` "permission store unavailable (REASON); retry in
5 s" with ``data.retry_after_seconds`` - over stdio and HTTP, both protocol eras; never the SDK's
generic internal error, the database host or driver text (``tools/call`` fails the same way, before
anything is sent: it cannot read the caller's grants). Once the database is back, each works again.
Open access (no API keys): with keys, HTTP fails at the key check with 503 (``test_store_outage_http``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from host.access import AccessControl
from servers.cli.app import app
from tests.faults.audit_faults import NOT_SENT, RAN_AUDITED, RAN_NO_ROW, audited_keys, recorder_config, table
from tests.postgres import PostgresCluster
from tests.servers.serve_proc import TOOLHOST, serve_http

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests/peers/conformance_server.py"
pytestmark = pytest.mark.anyio

OUTAGE = "error -32603: permission store unavailable (unreachable); retry in 5 s {'reason': 'store_unavailable', " \
         "'store_reason': 'unreachable', 'retry_after_seconds': 5}"


def _admin(data: Path, url: str, *args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--data-dir", str(data), "--db-url", url])
    assert result.exit_code == 0, result.stdout
    return result.stdout


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30, "audit_wait_seconds": 1.0},
                               "mcpServers": {"fx": {"command": sys.executable, "args": [str(FIXTURE), "--stdio"]}}}))
    return cfg


def _methods(c: Client, resource: str) -> dict[str, Callable[[], Awaitable[Any]]]:
    return {
        "tools/list": lambda: c.list_tools(),
        "tool_search": lambda: c.call_tool("tool_search", {"query": "prompt"}),
        "tools/call": lambda: c.call_tool("call_tool", {"name": "fx__test_simple_text", "arguments": {}}),
        "prompts/list": lambda: c.list_prompts(),
        "prompts/get": lambda: c.get_prompt("fx__test_simple_prompt"),
        "resources/list": lambda: c.list_resources(),
        "resources/read": lambda: c.read_resource(resource),
        "completion/complete": lambda: c.complete(
            {"type": "ref/prompt", "name": "fx__test_prompt_with_arguments"}, {"name": "arg1", "value": "a"}),
    }


def _outcome(answer: Any) -> str:
    if isinstance(answer, MCPError):
        return f"error {answer.code}: {answer.message} {answer.data}"
    content = getattr(answer, "content", None)
    if getattr(answer, "is_error", False) and content:
        return "tool error: " + content[0].text
    return "ok"


async def _round(c: Client, pg: PostgresCluster) -> dict[str, tuple[str, str]]:
    """Each method with the database stopped, then again once it is back: method -> (down, back)."""
    resources = await c.list_resources()
    uri = str(next(r.uri for r in resources.resources if "static-text" in str(r.uri)))
    down: dict[str, str] = {}
    await anyio.to_thread.run_sync(pg.pause)
    try:
        for name, call in _methods(c, uri).items():
            try:
                down[name] = _outcome(await call())
            except MCPError as err:
                down[name] = _outcome(err)
    finally:
        await anyio.to_thread.run_sync(pg.resume)
    back = {}
    for name, call in _methods(c, uri).items():
        try:
            back[name] = _outcome(await call())
        except MCPError as err:
            back[name] = _outcome(err)
    return {name: (down[name], back[name]) for name in down}


async def _raw_http(endpoint: str, pg: PostgresCluster) -> list[tuple[int, str | None, str, dict[str, Any]]]:
    """tools/list over plain HTTP with the database stopped, on a 2025-11-25 session and as a
    2026-07-28 request: (status, Retry-After, content type, JSON-RPC error object)."""
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    modern_meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                   "io.modelcontextprotocol/clientCapabilities": {}}
    async with httpx2.AsyncClient(timeout=30) as http:
        up = await http.post(endpoint, json=init, headers=accept)
        legacy = {**accept, "Mcp-Session-Id": up.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        await http.post(endpoint, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=legacy)
        modern = {**accept, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
        await anyio.to_thread.run_sync(pg.pause)
        try:
            answers = [
                await http.post(endpoint, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=legacy),
                await http.post(endpoint, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                                                "params": {"_meta": modern_meta}}, headers=modern),
            ]
        finally:
            await anyio.to_thread.run_sync(pg.resume)
    return [(r.status_code, r.headers.get("retry-after"), r.headers.get("content-type", "").split(";")[0],
             _rpc_error(r.text)) for r in answers]


def _rpc_error(text: str) -> dict[str, Any]:
    for line in text.splitlines():  # a JSON body, or the data line of an event stream
        body = line.removeprefix("data:").strip()
        if body.startswith("{"):
            return json.loads(body).get("error", {})
    return {}


async def test_every_method_answers_the_store_outage_error(tmp_path: Path) -> None:
    data, cfg = tmp_path / "home", _config(tmp_path)
    found: dict[str, dict[str, tuple[str, str]]] = {}
    with PostgresCluster() as pg:
        url = pg.create_database("toolhost")
        _admin(data, url, "users", "list")
        params = StdioServerParameters(command=TOOLHOST, args=["serve", "--stdio", "--config", str(cfg),
                                                              "--data-dir", str(data), "--db-url", url])
        for mode in ("legacy", "2026-07-28"):
            with anyio.fail_after(180):
                async with Client(params, mode=mode) as c:
                    found[f"stdio {mode}"] = await _round(c, pg)
        with serve_http(cfg, data, "--db-url", url) as (endpoint, _proc, _out):
            for mode in ("legacy", "2026-07-28"):
                with anyio.fail_after(180):
                    async with Client(streamable_http_client(endpoint), mode=mode) as c:
                        found[f"http {mode}"] = await _round(c, pg)
            with anyio.fail_after(120):
                raw = await _raw_http(endpoint, pg)
    # a 2025-11-25 session's answer streams (status 200 sent before the handler ran: it cannot change):
    # the same error object is in the stream; a 2026-07-28 request's answer is JSON: 503 with Retry-After
    error = {"code": -32603, "message": "permission store unavailable (unreachable); retry in 5 s",
             "data": {"reason": "store_unavailable", "store_reason": "unreachable", "retry_after_seconds": 5}}
    assert raw == [(200, None, "text/event-stream", error), (503, "5", "application/json", error)]
    every = ("tools/list", "tool_search", "tools/call", "prompts/list", "prompts/get", "resources/list",
             "resources/read", "completion/complete")
    assert found == {where: {name: (OUTAGE, "ok") for name in every}
                     for where in ("stdio legacy", "stdio 2026-07-28", "http legacy", "http 2026-07-28")}


async def _recorded_calls(c: Client, prefix: str, pg: PostgresCluster) -> dict[str, Any]:
    """before (runs), w0 / d0 / r0 with PostgreSQL stopped, after (runs): the answers by key."""
    out: dict[str, Any] = {}

    async def call(tool: str, key: str) -> None:
        try:
            out[key] = await c.call_tool("call_tool", {"name": tool, "arguments": {"key": key}})
        except MCPError as err:
            out[key] = err

    await call("rec__write", f"{prefix}-before")
    await anyio.to_thread.run_sync(pg.pause)
    try:
        for tool, key in (("rec__write", "w0"), ("rec__delete", "d0"), ("rec__read", "r0")):
            await call(tool, f"{prefix}-{key}")
    finally:
        await anyio.to_thread.run_sync(pg.resume)
    await call("rec__write", f"{prefix}-after")
    return out


async def test_no_call_runs_without_a_row_while_postgresql_is_stopped(tmp_path: Path) -> None:
    data, calls_dir, cfg = tmp_path / "home", tmp_path / "calls", tmp_path / "config.json"
    cfg.write_text(json.dumps(recorder_config(calls_dir)))
    answers: dict[str, Any] = {}
    with PostgresCluster() as pg:
        url = pg.create_database("toolhost")
        _admin(data, url, "users", "list")
        with serve_http(cfg, data, "--db-url", url) as (endpoint, _proc, _out):
            for mode in ("legacy", "2026-07-28"):
                with anyio.fail_after(180):
                    async with Client(streamable_http_client(endpoint), mode=mode) as c:
                        answers |= await _recorded_calls(c, f"http-{mode}", pg)
        params = StdioServerParameters(command=TOOLHOST, args=["serve", "--stdio", "--config", str(cfg),
                                                              "--data-dir", str(data), "--db-url", url])
        with anyio.fail_after(180):
            async with Client(params) as c:
                answers |= await _recorded_calls(c, "stdio", pg)
        access = AccessControl.open(data, url=url)
        try:
            audited = audited_keys(access)
        finally:
            access.close()
    found = {}
    for key, answer in answers.items():
        ran = (calls_dir / f"{key}.started").exists()
        said = _outcome(answer) == OUTAGE
        if ran:
            found[key] = RAN_AUDITED if key in audited else RAN_NO_ROW
        else:
            found[key] = NOT_SENT if said else _outcome(answer)
    print(table("serve (HTTP legacy, HTTP 2026-07-28, stdio), PostgreSQL stopped", found))
    where = ("http-legacy", "http-2026-07-28", "stdio")
    assert found == {f"{p}-{k}": (NOT_SENT if k in ("w0", "d0", "r0") else RAN_AUDITED)
                     for p in where for k in ("before", "w0", "d0", "r0", "after")}

"""A 2026-07-28 upstream's elicitation and sampling requests (input-required flow) through a real
``toolhost serve``: the user sees which server asks, ``toolhost.sampling: false`` refuses sampling
without asking anyone (a tool call as the tool's error, ``prompts/get`` and ``resources/read`` as
the same attributed JSON-RPC error ``-32600``), and a 2026-07-28 client's per-request log level reaches the upstream as
that request's ``_meta`` log level - over HTTP for both client eras and over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CreateMessageResult, ElicitResult, TextContent

from tests.servers.serve_proc import TOOLHOST, serve_http

ASKING = Path(__file__).with_name("asking_upstream.py")
pytestmark = pytest.mark.anyio


def _config(tmp_path: Path) -> Path:
    server = {"command": sys.executable, "args": [str(ASKING)]}
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "ask": server, "nosample": {**server, "toolhost": {"sampling": False}}}}))
    return cfg


class User:
    """The person behind the client: what they were asked, what their model was asked, what logs came."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []
        self.sampled: list[tuple[str, Any]] = []
        self.logs: list[str] = []

    async def elicit(self, _ctx: Any, params: Any) -> ElicitResult:
        self.asked.append((params.message, (params.meta or {}).get("toolhost/server")))
        return ElicitResult(action="accept", content={"ok": True})

    async def sample(self, _ctx: Any, params: Any) -> CreateMessageResult:
        self.sampled.append((params.system_prompt, (params.meta or {}).get("toolhost/server")))
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="42"), model="m")

    async def log(self, params: Any) -> None:
        self.logs.append(params.level)


async def _asks(c: Client, user: User) -> dict[str, str]:
    async def call(tool: str) -> str:
        r = await c.call_tool("call_tool", {"name": tool, "arguments": {}})
        return ("error: " if r.is_error else "") + r.content[0].text

    async def read(op: Any) -> str:
        try:
            r = await op
        except MCPError as err:
            return f"error {err.code}: {err.message} {err.data}"
        return r.messages[0].content.text if hasattr(r, "messages") else r.contents[0].text

    return {"ask": await call("ask__ask"), "think": await call("ask__think"),
            "nosample": await call("nosample__think"),
            "prompt": await read(c.get_prompt("ask__pondered")),
            "nosample prompt": await read(c.get_prompt("nosample__pondered")),
            "resource": await read(c.read_resource("toolhost://ask/thought://x")),
            "nosample resource": await read(c.read_resource("toolhost://nosample/thought://x"))}


REFUSED = ("error -32600: toolhost: sampling is disabled for server 'nosample' in the gateway's config "
           "(toolhost.sampling: false) {'server': 'nosample', 'setting': 'toolhost.sampling'}")
EXPECTED = {
    "ask": "answer: accept {'ok': True}",
    "think": "LLM said: 42",
    "nosample": "error: toolhost: sampling is disabled for server 'nosample' in the gateway's config "
                "(toolhost.sampling: false)",
    "prompt": "LLM said: 42",
    "nosample prompt": REFUSED,
    "resource": "LLM said: 42",
    "nosample resource": REFUSED,
}


def _check(user: User, mode: str) -> None:
    # _meta["toolhost/server"] rides classic requests; the SDK sieves embedded input requests to the
    # 2026-07-28 surface, which has no params _meta, so there the text alone says who asks
    meta = "ask" if mode == "legacy" else None
    assert user.asked == [("[MCP server 'ask' asks] Proceed?", meta)]
    # the tool, the prompt and the resource of 'ask' each asked once; 'nosample' never reached the user
    assert user.sampled == [("[Requested by MCP server 'ask' through toolhost]", meta)] * 3


async def test_a_2026_upstream_asks_attributed_and_sampling_can_be_refused(tmp_path: Path) -> None:
    cfg, data = _config(tmp_path), tmp_path / "home"
    with serve_http(cfg, data) as (url, _proc, _out):
        for mode in ("legacy", "2026-07-28"):
            user = User()
            with anyio.fail_after(120):
                async with Client(streamable_http_client(url), mode=mode, elicitation_callback=user.elicit,
                                  sampling_callback=user.sample) as c:
                    assert await _asks(c, user) == EXPECTED, mode
            _check(user, mode)
    for mode in ("legacy", "2026-07-28"):
        user = User()
        params = StdioServerParameters(command=TOOLHOST, args=["serve", "--stdio", "--config", str(cfg),
                                                              "--data-dir", str(data)])
        with anyio.fail_after(120):
            async with Client(params, mode=mode, elicitation_callback=user.elicit,
                              sampling_callback=user.sample) as c:
                assert await _asks(c, user) == EXPECTED, mode
        _check(user, mode)


async def test_a_2026_clients_log_level_reaches_a_2026_upstream(tmp_path: Path) -> None:
    cfg, data = _config(tmp_path), tmp_path / "home"
    with serve_http(cfg, data) as (url, _proc, _out):
        got: dict[str, list[str]] = {}
        for level in ("warning", "debug", None):
            user = User()
            with anyio.fail_after(120):
                async with Client(streamable_http_client(url), mode="2026-07-28", log_level=level,
                                  logging_callback=user.log) as c:
                    r = await c.call_tool("call_tool", {"name": "ask__chatty", "arguments": {}})
                    assert r.content[0].text == "logged"
            got[str(level)] = user.logs
    assert got == {
        "warning": ["warning", "error", "critical", "alert", "emergency"],
        "debug": ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"],
        "None": [],
    }
    # the first call asked for warning: the upstream was asked for info and up (the server log keeps
    # info whatever a client asks), so its log file has no debug line for that call (the second asked
    # for debug; the third asked for none, so toolhost's default, debug)
    lines = (data / "logs" / "ask.log").read_text().splitlines()
    levels = [line.split()[1] for line in lines if " chatty: " in line]
    assert levels == ["INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"] + [
        "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"] * 2

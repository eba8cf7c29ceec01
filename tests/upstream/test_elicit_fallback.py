"""An upstream in the SDK's common style (``ctx.elicit()`` mid-call) works under the default
``protocol: auto``: on its 2026-07-28 session the SDK refuses the ask for lack of a back-channel,
toolhost reconnects it with the 2025-11-25 handshake and sends the call again; later calls go
straight to the handshake session. Through :class:`HostRuntime` and through a real ``toolhost
serve`` with an SDK client answering the elicitation (downstream on both protocol eras)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult

from host.calls import ResultStatus
from host.config import parse_config
from host.runtime import HostRuntime
from host.upstream.forward import get_prompt
from host.upstream.relay import Downstream, downstream_scope
from tests.admin.support import Serve, people

ELICITING = Path(__file__).resolve().parents[1] / "peers" / "eliciting_server.py"
FALLBACK_WARNING = (
    "the server asks the client mid-call in the handshake-era style (its elicitation/create was refused on "
    "2026-07-28 during book_table), so toolhost reconnected it with the 2025-11-25 handshake; set "
    'mcpServers.ask.toolhost.protocol to "legacy" to start that way')

pytestmark = pytest.mark.anyio


def _entry(calls: Path, **toolhost: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(ELICITING), str(calls)],
            "toolhost": {"risk": {"book_table": "read"}} | toolhost}


async def test_an_eliciting_upstream_works_under_auto_through_the_runtime(tmp_path) -> None:
    calls = tmp_path / "calls.txt"
    cfg = parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {"ask": _entry(calls)}})
    asked: list[str] = []

    async def elicit(params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"party": 4 if "friday" in params.message else 2})

    with anyio.fail_after(60):
        async with HostRuntime(cfg, data_dir=tmp_path / "data") as rt:
            conn = rt.manager.connection("ask")
            assert conn.status.protocol_version == "2026-07-28"
            with downstream_scope(Downstream(session=object(), elicit=elicit)):
                first = await rt.call("ask__book_table", {"day": "friday"})
                second = await rt.call("ask__book_table", {"day": "monday"})
            status = conn.status
    assert (first.status, first.content[0].text) == (ResultStatus.OK, "booked friday for 4")
    assert (second.status, second.content[0].text) == (ResultStatus.OK, "booked monday for 2")
    assert asked == ["[MCP server 'ask' asks] How many people on friday?",  # attributed to the server asking
                     "[MCP server 'ask' asks] How many people on monday?"]
    assert calls.read_text().splitlines() == ["friday", "friday", "monday"]  # refused once, then ran once each
    assert status.protocol_version == "2025-11-25"
    assert status.warnings == [FALLBACK_WARNING]
    log = (tmp_path / "data" / "logs" / "ask.stderr.log").read_text()
    assert f"toolhost: {FALLBACK_WARNING}; retrying book_table once" in log


async def test_an_eliciting_prompt_works_under_auto(tmp_path) -> None:
    cfg = parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {"ask": _entry(tmp_path / "c")}})

    async def elicit(_params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"party": 3})

    with anyio.fail_after(60):
        async with HostRuntime(cfg, data_dir=tmp_path / "data") as rt:
            conn = rt.manager.connection("ask")
            with downstream_scope(Downstream(session=object(), elicit=elicit)):
                prompt = await get_prompt(conn, "booking", {"day": "sunday"}, timeout_seconds=30)
            warnings = conn.status.warnings
    assert prompt.messages[0].content.text == "Book a table on sunday for 3."
    assert warnings == [FALLBACK_WARNING.replace("during book_table", "during prompts/get booking")]


async def test_a_pinned_legacy_upstream_starts_with_the_handshake_and_runs_once(tmp_path) -> None:
    calls = tmp_path / "calls.txt"
    cfg = parse_config({"mcpServers": {"ask": _entry(calls, protocol="legacy")}})

    async def decline(_params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    with anyio.fail_after(60):
        async with HostRuntime(cfg, data_dir=tmp_path / "data") as rt:
            assert rt.manager.connection("ask").status.protocol_version == "2025-11-25"
            with downstream_scope(Downstream(session=object(), elicit=decline)):
                res = await rt.call("ask__book_table", {"day": "friday"})
            assert rt.manager.connection("ask").status.warnings == []
    assert res.content[0].text == "not booked (decline)"
    assert calls.read_text().splitlines() == ["friday"]


async def test_an_eliciting_upstream_works_under_auto_through_serve(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    keys = people(data)
    from host.access import AccessControl

    access = AccessControl.open(data)
    try:
        access.grants.add("alice", "server:ask")
    finally:
        access.close()
    calls = tmp_path / "calls.txt"
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {"ask": _entry(calls)}}))
    texts: dict[str, list[str]] = {}
    with Serve(cfg, data) as serve:
        for mode, party in (("auto", 6), ("legacy", 3), ("auto", 5)):
            async def elicit(_ctx: Any, params: Any, party: int = party) -> ElicitResult:
                return ElicitResult(action="accept", content={"party": party})

            with anyio.fail_after(60):
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {keys['alice']}"},
                                              timeout=50) as http, \
                        Client(streamable_http_client(serve.url + "/mcp", http_client=http), mode=mode,
                               elicitation_callback=elicit) as client:
                    result = await client.call_tool("ask__book_table", {"day": mode})
                    texts.setdefault(client.protocol_version, []).append(result.content[0].text)
                    if mode == "auto" and party == 6:  # the call that found out: the client calls again
                        result = await client.call_tool("ask__book_table", {"day": mode})
                        texts[client.protocol_version].append(result.content[0].text)
    assert texts == {
        "2026-07-28": [
            "upstream_error: the server 'ask' answered with MCP error -32600: Cannot send 'elicitation/create': this "
            "transport context has no back-channel for server-initiated requests. (toolhost reconnected the server "
            "with the 2025-11-25 handshake, which lets it ask you mid-call: call the tool again)",
            "booked auto for 6", "booked auto for 5"],
        "2025-11-25": ["booked legacy for 3"]}
    assert calls.read_text().splitlines() == ["auto", "auto", "legacy", "auto"]

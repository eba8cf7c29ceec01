"""Property test of the transport guard: whatever a hostile upstream writes, each item is
delivered, turned into an error for the one pending request it names, or skipped and logged —
never raised, and a pending request named by garbage is failed at once with -32700."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client.stdio import _parse_line
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest

from host.upstream.guard import CALL_SLOT, PARSE_ERROR_CODE, CallSlot, TransportGuard

LINES = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                 lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                 max_leaves=12).map(json.dumps),
    st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": st.integers(0, 50)},
                          optional={"result": st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
                                    "method": st.integers()}).map(json.dumps),
)


def _guard() -> tuple[TransportGuard, list[str]]:
    logged: list[str] = []
    return TransportGuard("fuzz", log=logged.append, on_closed=lambda _r: None), logged


@settings(max_examples=300, deadline=None)
@given(st.lists(LINES, max_size=20))
def test_any_input_is_delivered_failed_or_skipped_and_logged(lines):
    guard, logged = _guard()
    guard.outbound(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/call", params={"name": "t"})))
    for line in lines:
        item = _parse_line(line)
        before = guard.skipped
        out = guard.inbound(item)
        if out is None:
            assert guard.skipped == before + 1 and len(logged) == guard.skipped
        else:
            assert isinstance(out, SessionMessage)
            if isinstance(item, Exception):  # garbage naming a pending id: that request fails
                assert isinstance(out.message, JSONRPCError) and out.message.error.code == PARSE_ERROR_CODE


@given(st.sampled_from(['{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"te',
                        '{"jsonrpc": "2.0", "id": 7, "result": 12}',
                        '{"id":7,"jsonrpc":"2.0","error":"not an object"}']))
def test_an_unparseable_reply_fails_its_pending_request(line):
    guard, _ = _guard()
    slot = CallSlot()
    token = CALL_SLOT.set(slot)
    try:
        guard.outbound(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/call")))
    finally:
        CALL_SLOT.reset(token)
    assert (slot.sent, slot.request_id) == (True, 7)
    out = guard.inbound(_parse_line(line))
    assert isinstance(out.message, JSONRPCError) and out.message.id == 7
    assert out.message.error.code == PARSE_ERROR_CODE
    assert out.message.error.message.startswith("the server's reply to tools/call could not be parsed (")
    assert "7" not in guard.in_flight  # answered once; a late duplicate is skipped
    assert guard.inbound(_parse_line('{"jsonrpc":"2.0","id":7,"result":{}}')) is None

"""Request-id checks of ``toolhost serve``'s HTTP sessions (:mod:`servers.http.transport`).

Hostile-caller findings: two requests with one id in flight in one session crossed (the second
POST received the first call's result, the first never got an answer); a request with an id that
is not a string or an integer was taken for a notification (202, no answer ever). A real upstream
(our conformance fixture over stdio) behind ``serve_http``; the client is raw HTTP so the test
sends exactly the bytes a careless client would.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest

from servers.http.transport import id_keys, id_problem
from tests.servers.test_sse_resume import ACCEPT, _events, served

pytestmark = pytest.mark.anyio


async def _session(http: httpx2.AsyncClient, url: str, capabilities: dict[str, Any]) -> dict[str, str]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "1"}}}
    r = await http.post(url, json=body, headers={"Accept": ACCEPT})
    assert r.status_code == 200
    headers = {"Accept": ACCEPT, "Mcp-Session-Id": r.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
    assert (await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                            headers=headers)).status_code == 202
    return headers


async def _messages(lines: Any, until: Any) -> list[dict[str, Any]]:
    """Data messages of an SSE response's lines (one iterator, read on) until ``until(message)``."""
    out: list[dict[str, Any]] = []
    block: list[str] = []
    async for line in lines:
        block.append(line)
        if line == "":
            for event in _events(block):
                if event.get("data"):
                    out.append(json.loads(event["data"]))
            block = []
            if out and until(out[-1]):
                return out
    return out


async def test_a_second_request_with_an_id_in_flight_is_refused_and_the_first_gets_its_own_result(tmp_path):
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "fx__test_elicitation", "arguments": {"message": "Your name?"}}}
    with anyio.fail_after(60):
        async with served(tmp_path) as url, httpx2.AsyncClient(timeout=30) as http:
            headers = await _session(http, url, {"elicitation": {}})
            async with http.stream("POST", url, json=call, headers=headers) as r:
                first = r.aiter_lines()
                # the upstream asks the user: the call is in flight until the client answers
                asked = await _messages(first, lambda m: m.get("method") == "elicitation/create")
                question = asked[-1]
                assert question["params"]["message"] == "[MCP server 'fx' asks] Your name?"  # attributed

                for same in (7, "7"):  # the SDK keys streams by str(id): 7 and "7" are one
                    dup = {**call, "id": same, "params": {"name": "fx__test_simple_text", "arguments": {}}}
                    r = await http.post(url, json=dup, headers=headers)
                    assert r.status_code == 400
                    assert r.json() == {"jsonrpc": "2.0", "id": same, "error": {"code": -32600, "message": (
                        f"Invalid Request: id {json.dumps(same)} is already in flight in this session; give every "
                        "request of a session its own id")}}

                answer = {"jsonrpc": "2.0", "id": question["id"],
                          "result": {"action": "accept", "content": {"response": "Ada"}}}
                assert (await http.post(url, json=answer, headers=headers)).status_code == 202
                rest = await _messages(first, lambda m: m.get("id") == 7)
            result = rest[-1]["result"]
            assert result["content"] == [{"type": "text",
                                          "text": 'User response: action=accept, content={"response": "Ada"}'}]

            # the session is unharmed: the next request (with its own id) is answered
            again = {**call, "id": 8, "params": {"name": "fx__test_simple_text", "arguments": {}}}
            async with http.stream("POST", url, json=again, headers=headers) as r:
                done = await _messages(r.aiter_lines(), lambda m: m.get("id") == 8)
            assert done[-1]["result"]["content"] == [
                {"type": "text", "text": "This is a simple text response for testing."}]


@pytest.mark.parametrize(("rid", "shown"), [(None, "null"), (1.5, "1.5"), ({"a": 1}, '{"a": 1}'), (True, "true")])
async def test_a_request_whose_id_is_not_a_string_or_integer_gets_an_error_not_silence(tmp_path, rid, shown):
    with anyio.fail_after(60):
        async with served(tmp_path) as url, httpx2.AsyncClient(timeout=30) as http:
            headers = await _session(http, url, {})
            r = await http.post(url, json={"jsonrpc": "2.0", "id": rid, "method": "ping"}, headers=headers)
            assert r.status_code == 400
            assert r.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": (
                f"Invalid Request: the id of 'ping' is {shown}; MCP request ids are strings or integers "
                "(a message without an id is a notification)")}}
            ok = await http.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers=headers)
            assert ok.status_code == 200  # the session is unharmed


def test_id_problem_ignores_notifications_responses_and_batches() -> None:
    assert id_problem({"jsonrpc": "2.0", "method": "notifications/initialized"}, set()) == (None, ())
    assert id_problem({"jsonrpc": "2.0", "id": 4, "result": {}}, {"4"}) == (None, ())
    assert id_problem([{"jsonrpc": "2.0", "id": 4, "method": "ping"}], set()) == (None, ())
    assert id_problem({"jsonrpc": "2.0", "id": 4, "method": "ping"}, {"5"}) == (None, ("4",))


def test_ids_count_as_one_the_way_the_sdk_correlates_them() -> None:
    """Review finding: the SDK's dispatcher coerces "07" to 7 (coerce_request_id)."""
    assert id_keys("07") == ("07", "7") and id_keys(7) == ("7",) and id_keys("abc") == ("abc",)
    problem, _ = id_problem({"jsonrpc": "2.0", "id": "07", "method": "ping"}, {"7"})
    assert problem is not None and "already in flight" in problem


async def test_an_id_stays_in_flight_after_its_post_dropped_until_the_call_is_answered(tmp_path):
    """Review finding: the id was freed when the POST ended, so a client that dropped its stream
    mid-call could reuse the id while the call still ran and receive that call's result."""
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "fx__test_elicitation", "arguments": {"message": "Your name?"}}}
    simple = {**call, "params": {"name": "fx__test_simple_text", "arguments": {}}}
    with anyio.fail_after(60):
        async with served(tmp_path) as url, httpx2.AsyncClient(timeout=30) as http:
            headers = await _session(http, url, {"elicitation": {}})
            events: list[dict[str, str]] = []
            async with http.stream("POST", url, json=call, headers=headers) as r:
                block: list[str] = []
                async for line in r.aiter_lines():
                    block.append(line)
                    if line == "":
                        events += _events(block)
                        block = []
                        if any("elicitation/create" in e.get("data", "") for e in events):
                            break  # the client drops its stream while the call waits for the user
            question = json.loads(next(e["data"] for e in events if "elicitation/create" in e.get("data", "")))

            again = await http.post(url, json=simple, headers=headers)
            assert again.status_code == 400 and "is already in flight" in again.json()["error"]["message"]

            answer = {"jsonrpc": "2.0", "id": question["id"],
                      "result": {"action": "accept", "content": {"response": "Ada"}}}
            assert (await http.post(url, json=answer, headers=headers)).status_code == 202
            resume = {**headers, "Accept": "text/event-stream", "Last-Event-ID": events[-1]["id"]}
            async with http.stream("GET", url, headers=resume) as r:
                result = await _messages(r.aiter_lines(), lambda m: m.get("id") == 7)
            assert result[-1]["result"]["content"][0]["text"] == (
                'User response: action=accept, content={"response": "Ada"}')

            async with http.stream("POST", url, json=simple, headers=headers) as r:  # answered: free again
                done = await _messages(r.aiter_lines(), lambda m: m.get("id") == 7)
            assert done[-1]["result"]["content"] == [
                {"type": "text", "text": "This is a simple text response for testing."}]

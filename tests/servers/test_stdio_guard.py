"""Malformed lines on ``toolhost serve --stdio`` get an answer (:mod:`servers.stdio.malformed`).

Hostile-caller finding: ``not json``, ``[]``, two messages on one line or a request with an
object id got no reply and no log line; the client waited forever. A real ``serve --stdio``
process; the test writes raw lines and reads the replies.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.servers.test_serve_process import TOOLHOST

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


async def test_malformed_lines_get_json_rpc_errors_and_the_session_goes_on(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"mcpServers": {}}))
    lines = [
        json.dumps(INIT),
        "not json",
        "",
        "[]",
        '{"jsonrpc":"2.0","id":5,"method":"ping"}{"jsonrpc":"2.0","id":6,"method":"ping"}',
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}',
        '{"jsonrpc":"2.0","method":"ping"}',  # a notification (no id): never answered (JSON-RPC 4.1)
        '{"jsonrpc":"2.0","id":null,"method":"ping"}',  # odd ids: requests awaiting an answer
        '{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}',
        json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"pad": "x" * (5 << 20)}}),  # > 4 MiB
        json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
    ]
    with anyio.fail_after(60):
        async with await anyio.open_process(
            [TOOLHOST, "serve", "--stdio", "--config", str(cfg), "--data-dir", str(tmp_path / "data")],
            stderr=subprocess.PIPE,
        ) as proc:
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            await proc.stdin.send(("\n".join(lines) + "\n").encode())
            replies: list[dict] = []
            buffer = b""
            while not any(r.get("id") == 9 for r in replies):
                buffer += await proc.stdout.receive()
                *done, buffer = buffer.split(b"\n")
                replies += [json.loads(line) for line in done if line.strip()]
            await proc.stdin.aclose()
            errors = b""
            async for chunk in proc.stderr:
                errors += chunk
    by_id = {r["id"]: r for r in replies if r.get("id") is not None}
    assert "serverInfo" in by_id[1]["result"]
    assert by_id[9] == {"jsonrpc": "2.0", "id": 9, "result": {}}  # the session goes on
    answered = [r["error"] for r in replies if r.get("id") is None]  # in the order of the lines
    assert [e["code"] for e in answered] == [-32700, -32600, -32700, -32600, -32600, -32600]
    assert [e["message"] for e in answered[3:]] == [
        "Invalid Request: the id of 'ping' is null; MCP request ids are strings or integers (a message "
        "without an id is a notification)",
        "Invalid Request: the id of 'tools/list' is 1.5; MCP request ids are strings or integers (a message "
        "without an id is a notification)",
        "Invalid Request: a line of more than 4,194,304 bytes is over toolhost's stdio message limit (4 MiB, the "
        "same as its HTTP body limit); send smaller arguments (large inputs belong in a file or resource the tool "
        "reads)"]
    assert answered[0]["message"] == (
        "Parse error: Invalid JSON: expected ident at line 1 column 2; send one JSON-RPC message per line, as JSON")
    assert answered[2]["message"].startswith("Parse error: Invalid JSON: trailing characters at line 1 column 41")
    assert by_id[7]["error"] == {"code": -32600, "message": (  # its id could be read: the request ends
        "Invalid Request: the line is JSON but not one valid JSON-RPC message (an object with jsonrpc '2.0' "
        "and a method with object params, or a result/error with an id); batches are not supported")}
    assert set(by_id) == {1, 7, 9}  # nothing else answered: the blank line and the notification (the 5 MiB
    # request's id was never read: answered with id null, as JSON-RPC 2.0 section 5 asks)
    reported = [line for line in errors.decode().splitlines() if line.startswith("toolhost: stdin: ")]
    assert 1 <= len(reported) <= 6  # at most one line a second, the rest counted
    assert "tools/call" not in errors.decode()  # the reason only, never the line's content


def test_serve_stops_when_its_client_closed_stdout_even_with_stdin_open(tmp_path: Path) -> None:
    """Hostile-caller finding: a client that closed its end of stdout (but not stdin) kept serve
    running its calls although no answer could reach it; now the first failed write ends serve
    (calls in flight are cancelled as on EOF)."""
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"mcpServers": {}}))
    proc = subprocess.Popen(
        [TOOLHOST, "serve", "--stdio", "--config", str(cfg), "--data-dir", str(tmp_path / "data")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(INIT) + "\n").encode())
        proc.stdin.flush()
        assert "serverInfo" in json.loads(proc.stdout.readline())["result"]
        proc.stdout.close()  # the client stops reading; stdin stays open
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode() + b"\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0  # ended by the broken stdout alone
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        proc.stdin.close()


async def test_on_the_fallback_path_an_oversized_line_is_answered_too() -> None:
    """stdout not a pipe (the SDK's stdio_server with the guard): a line over the limit is answered
    -32600 like on the direct path, not skipped as blank."""
    from pydantic import ValidationError  # noqa: PLC0415

    import mcp_types as types  # noqa: PLC0415
    from servers.stdio.malformed import OVERSIZED_LINE, line_error  # noqa: PLC0415

    with pytest.raises(ValidationError) as e:
        types.jsonrpc_message_adapter.validate_json(OVERSIZED_LINE)  # what the SDK's reader does with it
    reply = line_error(e.value)
    assert reply is not None and reply.id is None
    assert reply.error.model_dump(exclude_none=True) == {"code": -32600, "message": (
            "Invalid Request: a line of more than 4,194,304 bytes is over toolhost's stdio message limit (4 MiB, "
            "the same as its HTTP body limit); send smaller arguments (large inputs belong in a file or resource "
            "the tool reads)")}
